package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
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

// earlierDemo lays out a demo directory as rlgate demo does before its
// stages run (files, a ledger with its first entry, the manifest).
func earlierDemo(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Write(dir, Options{Seed: 1, Inject: InjectLeak}); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Init(ctx, filepath.Join(dir, ledger.DefaultDir))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := Record(ctx, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDemoForceReplacesOnlyAnEarlierDemo: Prepare with force empties a
// directory an earlier demo wrote, its ledger included, and leaves a
// missing or empty one to be made; when the directory holds a file the
// demo did not write or that changed since, or a manifest names a file
// outside it, it deletes nothing and names what is not the demo's.
func TestDemoForceReplacesOnlyAnEarlierDemo(t *testing.T) {
	ctx := context.Background()
	earlier := earlierDemo(t)
	os.WriteFile(filepath.Join(earlier, ManifestFile+".tmp"), []byte("{"), 0o644) // a Record killed mid-write
	if err := Prepare(ctx, earlier, true); err != nil {
		t.Fatal(err)
	}
	if left := files(t, earlier); len(left) != 0 {
		t.Errorf("--force left %d files of the earlier demo: %v", len(left), left)
	}

	edited := earlierDemo(t)
	os.WriteFile(filepath.Join(edited, PolicyFile), []byte("claims: [\"rl > base\"]\n"), 0o644)
	os.WriteFile(filepath.Join(edited, "spider", "notes.txt"), []byte("mine\n"), 0o644)
	outside := filepath.Join(filepath.Dir(edited), "outside.txt")
	os.WriteFile(outside, nil, 0o644)
	m, _ := os.ReadFile(filepath.Join(edited, ManifestFile))
	m = bytes.Replace(m, []byte(`"files": {`), []byte(`"files": {"../outside.txt": "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",`), 1)
	os.WriteFile(filepath.Join(edited, ManifestFile), m, 0o644)
	before := len(files(t, edited))
	err := Prepare(ctx, edited, true)
	if err == nil || !strings.Contains(err.Error(), "did not write: "+PolicyFile+", spider/notes.txt;") {
		t.Errorf("edited demo: %v", err)
	}
	if after := len(files(t, edited)); after != before {
		t.Errorf("a refused --force deleted %d files", before-after)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a manifest made --force delete a file outside the directory: %v", err)
	}

	missing := filepath.Join(t.TempDir(), "a", "b")
	if err := Prepare(ctx, missing, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Errorf("missing directory not made: %v", err)
	}
}
