package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/lab/demo"
)

// demoTree lists the files under dir with their contents.
func demoTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDemoNeverTouchesAnExistingDirUnasked: a directory that exists and
// is not empty is refused without --force, whether or not a demo wrote
// it, and with --force when no demo wrote it; nothing in it changes.
func TestDemoNeverTouchesAnExistingDirUnasked(t *testing.T) {
	t.Parallel()
	mine := t.TempDir()
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("my notes\n"), 0o644)
	os.WriteFile(filepath.Join(mine, demo.PipelineFile), []byte("stages: {}\n"), 0o644)
	earlier := t.TempDir()
	if _, err := demo.Write(earlier, demo.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(earlier, "notes.txt"), []byte("kept until --force\n"), 0o644)
	for _, c := range []struct {
		name, dir string
		args      []string
		want      string
	}{
		{"user's dir", mine, nil, "--force to replace an earlier demo's directory"},
		{"user's dir with --force", mine, []string{"--force"}, "holds files no rlgate demo wrote"},
		{"earlier demo without --force", earlier, nil, "never deletes or overwrites it unasked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := demoTree(t, c.dir)
			code, _, errOut := rlgate(t, append([]string{"demo", "--dir", c.dir}, c.args...)...)
			if code != exitError || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want %d with %q: %s", code, exitError, c.want, errOut)
			}
			if d := cmp.Diff(before, demoTree(t, c.dir)); d != "" {
				t.Errorf("the directory changed (-before +after):\n%s", d)
			}
		})
	}
	if code, _, errOut := rlgate(t, "demo", "--dir", filepath.Join(t.TempDir(), "d"), "--inject", "typo"); code != exitUsage {
		t.Errorf("--inject typo: exit %d, want %d: %s", code, exitUsage, errOut)
	}
}
