package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// Prepare makes dir ready for a demo: a missing or empty directory is
// created or used as is. One that holds anything is never touched without
// force; with force the files an earlier demo wrote there are deleted,
// but only when everything in it is that demo's: its manifest lists every
// file, unchanged, and its ledger has no entry after the demo's last.
// Anything else (a user's notes or key, an entry added since) is named
// and nothing is deleted, so --force cannot delete someone's files.
func Prepare(ctx context.Context, dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("demo directory: %w", err)
	case len(entries) == 0:
		return nil
	case !force:
		return &ledger.Error{Op: "demo directory", Path: dir, Err: errors.New("exists and is not empty; the demo never deletes or overwrites it unasked"),
			Hint: "rlgate demo --dir NEW_DIR, or --force to replace an earlier demo's directory"}
	}
	m, err := readManifest(dir)
	if err != nil || m == nil {
		why := "no " + ManifestFile + " lists what an earlier demo wrote"
		if err != nil {
			why = err.Error()
		}
		return &ledger.Error{Op: "demo directory", Path: dir, Err: errors.New("exists and holds files no rlgate demo wrote (" + why + "); --force replaces only an earlier demo's files"),
			Hint: "rlgate demo --dir NEW_DIR"}
	}
	ours, theirs, err := sortOut(ctx, dir, m)
	if err != nil {
		return fmt.Errorf("demo directory %s: %w", dir, err)
	}
	if len(theirs) > 0 {
		return &ledger.Error{Op: "demo directory", Path: dir, Err: fmt.Errorf("holds what the earlier demo did not write: %s; --force deletes nothing then", nameSome(theirs, 5)),
			Hint: "move them out of the directory, or rlgate demo --dir NEW_DIR"}
	}
	if err := removeDemo(dir, ours); err != nil {
		return fmt.Errorf("replace demo directory: %w", err)
	}
	return nil
}

// nameSome joins the first n of names, counting the rest.
func nameSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// Write lays out a prepared demo directory for the variant o: the
// pipeline file, the gate policy and any file the variant needs, the
// unpacked benchmark under spider/, and the evals/ and logs/ directories
// the stages write into. It returns the benchmark's parts. The caller
// records the demo's manifest (Record) once its ledger is made.
func Write(dir string, o Options) ([]Part, error) {
	files, err := Files(o)
	if err != nil {
		return nil, err
	}
	for name, b := range files {
		if err := writeFile(filepath.Join(dir, name), b); err != nil {
			return nil, err
		}
	}
	parts, err := Unpack(filepath.Join(dir, SpiderDir), UnpackOptionsFor(o))
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"evals", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	return parts, nil
}
