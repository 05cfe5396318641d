package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPlaces: under each data root, the recorded path's tails from the
// longest, then the recorded path; a tail never climbs out of its root.
func TestPlaces(t *testing.T) {
	c := WithDataRoots(ctx, []string{"/r1", "/r2"})
	got := Places(c, "/home/u/exp/data/rl")
	want := []string{"/r1/home/u/exp/data/rl", "/r1/u/exp/data/rl", "/r1/exp/data/rl", "/r1/data/rl", "/r1/rl",
		"/r2/home/u/exp/data/rl", "/r2/u/exp/data/rl", "/r2/exp/data/rl", "/r2/data/rl", "/r2/rl", "/home/u/exp/data/rl"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Places (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"/r1/x/db", "/r1/db", "/r2/x/db", "/r2/db", "../../x/db"}, Places(c, "../../x/db")); d != "" {
		t.Errorf("Places of a path with .. (-want +got):\n%s", d)
	}
	long := "/" + strings.Repeat("d/", 1000) + "x.sqlite"
	if n := len(Places(c, long)); n != 2*maxTail+1 {
		t.Errorf("Places of a path of 1,001 elements: %d places, want %d", n, 2*maxTail+1)
	}
	if d := cmp.Diff([]string{"/a/b"}, Places(ctx, "/a/b")); d != "" {
		t.Errorf("Places without data roots (-want +got):\n%s", d)
	}
}

// TestReadRecorded: a recorded file is read from the blob store when it is
// there, else from a data root by the tail of its recorded path; a copy
// with other bytes is refused naming it and both digests, and a file found
// nowhere is named with its digest and --data-root.
func TestReadRecorded(t *testing.T) {
	l := ledgertest.New(t)
	body := []byte(`{"id":"t-0"}` + "\n")
	want := ledger.Sum(body)
	recorded := "/gone/exp/data/eval/tasks.jsonl"

	root := t.TempDir()
	copyAt := filepath.Join(root, "data", "eval", "tasks.jsonl")
	if err := os.MkdirAll(filepath.Dir(copyAt), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyAt, body, 0o644); err != nil {
		t.Fatal(err)
	}
	c := WithDataRoots(ctx, []string{root})
	if got, err := ReadRecorded(c, l, recorded, want); err != nil || string(got) != string(body) {
		t.Errorf("from the data root: %q, %v", got, err)
	}

	if err := os.WriteFile(copyAt, []byte(`{"id":"t-1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadRecorded(c, l, recorded, want)
	if err == nil || !strings.Contains(err.Error(), copyAt) || !strings.Contains(err.Error(), want.String()) ||
		!strings.Contains(err.Error(), ledger.Sum([]byte(`{"id":"t-1"}`+"\n")).String()) {
		t.Errorf("a changed copy: %v, want it named with both digests", err)
	}

	_, err = ReadRecorded(ctx, l, recorded, want)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), recorded) || !strings.Contains(err.Error(), want.String()) || !strings.Contains(err.Error(), "Try: --data-root DIR") {
		t.Errorf("found nowhere: %v", err)
	}

	if _, err := l.PutBlobBytes(body); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadRecorded(ctx, l, recorded, want); err != nil || string(got) != string(body) {
		t.Errorf("from the blob store: %q, %v", got, err)
	}
}

// TestFindDir: a directory is taken under a data root only when it holds
// every file asked for; else the recorded path stands, for the caller to
// report what is missing there.
func TestFindDir(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "spider", "database", "x", "x.sqlite")
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, []byte("db"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := WithDataRoots(ctx, []string{root})
	if got := FindDir(c, "/gone/exp/spider/database", []string{DBRel("x")}); got != filepath.Join(root, "spider", "database") {
		t.Errorf("FindDir = %s", got)
	}
	if got := FindDir(c, "/gone/exp/spider/database", []string{DBRel("x"), DBRel("y")}); got != "/gone/exp/spider/database" {
		t.Errorf("FindDir with a database missing = %s, want the recorded path", got)
	}
}
