package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// TestLoadTasks: an import directory gives its tasks, their digest and the
// database root it recorded; --limit keeps the first tasks; a bare file
// needs a database root; a missing path is named.
func TestLoadTasks(t *testing.T) {
	im, err := ImportSpider(ctx, SpiderOptions{Dev: spider + "/dev.json", Gold: spider + "/dev_gold.sql", DBRoot: spider + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "spider")
	if err := im.WriteDir(dir, false); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	src, err := LoadTasks(dir, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{src.Dir, src.Path, src.DBRoot, src.Digest.String()}
	want := []string{dir, filepath.Join(dir, TasksFile), im.Manifest.DBRoot, ledger.Sum(raw).String()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dir, path, db root, digest (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(im.Tasks[:3], src.Tasks); diff != "" {
		t.Errorf("--limit 3 tasks (-want +got):\n%s", diff)
	}

	file := filepath.Join(dir, TasksFile)
	if src, err := LoadTasks(file, "/db", 0); err != nil || src.Dir != "" || src.DBRoot != "/db" || len(src.Tasks) != len(im.Tasks) {
		t.Errorf("a tasks file with its db root: %+v, %v", src, err)
	}
	for _, bad := range []string{file, filepath.Join(dir, "nonexistent")} {
		if _, err := LoadTasks(bad, "", 0); !errors.Is(err, ErrTaskSource) {
			t.Errorf("LoadTasks(%s) = %v, want %v", bad, err, ErrTaskSource)
		}
	}
}
