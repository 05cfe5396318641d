package demo

import (
	"os"
	"path/filepath"
	"testing"
)

func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	return out
}

// TestDemoForceReplacesOnlyAnEarlierDemo: Prepare with force empties a
// directory an earlier demo wrote, and leaves a missing or empty one to be
// made.
func TestDemoForceReplacesOnlyAnEarlierDemo(t *testing.T) {
	earlier := t.TempDir()
	if _, err := Write(earlier, Options{Seed: 1, Inject: InjectLeak}); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(earlier, true); err != nil {
		t.Fatal(err)
	}
	if left := files(t, earlier); len(left) != 0 {
		t.Errorf("--force left %d files of the earlier demo", len(left))
	}
	missing := filepath.Join(t.TempDir(), "a", "b")
	if err := Prepare(missing, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Errorf("missing directory not made: %v", err)
	}
}
