package demo

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// header opens every pipeline file the demo writes; a directory whose
// rlgate.yaml starts with it is one an earlier demo wrote.
const header = "# rlgate demo "

// Prepare makes dir ready for a demo: a missing or empty directory is
// created or used as is. One that holds anything is never touched without
// force; with force it is deleted and made again, but only when an earlier
// demo wrote it (its rlgate.yaml says so), so a mistyped --dir cannot
// delete someone's files.
func Prepare(dir string, force bool) error {
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
	case !WrittenByDemo(dir):
		return &ledger.Error{Op: "demo directory", Path: dir, Err: errors.New("exists and holds files no rlgate demo wrote (its " + PipelineFile + " is not a demo's); --force replaces only an earlier demo's directory"),
			Hint: "rlgate demo --dir NEW_DIR"}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("replace demo directory: %w", err)
	}
	return os.MkdirAll(dir, 0o755)
}

// WrittenByDemo reports whether dir's pipeline file is one the demo wrote.
func WrittenByDemo(dir string) bool {
	f, err := os.Open(filepath.Join(dir, PipelineFile))
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return strings.HasPrefix(line, header)
}

// Write lays out a prepared demo directory for the variant o: the
// pipeline file first (so a demo interrupted while writing is still one
// --force may replace), the gate policy and any file the variant needs,
// the unpacked benchmark under spider/, and the evals/ and logs/
// directories the stages write into. It returns the benchmark's parts.
func Write(dir string, o Options) ([]Part, error) {
	files, err := Files(o)
	if err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, PipelineFile), files[PipelineFile]); err != nil {
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
