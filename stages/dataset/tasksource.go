package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/tasks"
)

// ErrTaskSource is returned when a tasks path names no tasks with their
// databases: it does not exist, or is a bare tasks file given without a
// database root.
var ErrTaskSource = errors.New("unusable tasks source")

// TaskSource is the public tasks an evaluation plays, as read from an
// imported dataset directory or a bare tasks.jsonl file.
type TaskSource struct {
	Dir    string        // the imported dataset directory; empty when a file was given
	Path   string        // the tasks file read
	Digest ledger.Digest // the tasks file's digest
	DBRoot string        // the database root: the one given, else the one recorded at import
	Tasks  []tasks.Task  // in file order, the first limit of them when limit > 0
}

// LoadTasks reads the public tasks of an imported dataset directory (or of
// a tasks.jsonl file, with dbRoot), keeping the first limit when limit > 0
// (as rollout --limit does: grading names an incomplete rollout's tasks by
// the same rule). The database root is dbRoot when given, else the one
// recorded at import.
func LoadTasks(path, dbRoot string, limit int) (*TaskSource, error) {
	src := &TaskSource{Path: path, DBRoot: dbRoot}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: --tasks %s does not exist. Try: --tasks DIR written by rlgate data import (or a tasks.jsonl FILE with --db-root DIR)", ErrTaskSource, path)
	}
	if err == nil && fi.IsDir() {
		src.Dir, src.Path = path, filepath.Join(path, TasksFile)
		if dbRoot == "" {
			man, err := ReadManifest(path)
			if err != nil {
				return nil, err
			}
			src.DBRoot = man.DBRoot
		}
	}
	if src.DBRoot == "" {
		return nil, fmt.Errorf("%w: --tasks %s is a file: give --db-root too", ErrTaskSource, path)
	}
	if src.Tasks, err = tasks.Read(src.Path); err != nil {
		return nil, err
	}
	if limit > 0 && limit < len(src.Tasks) {
		src.Tasks = src.Tasks[:limit]
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if src.Digest, _, err = ledger.SumReader(f); err != nil {
		return nil, fmt.Errorf("hash tasks %s: %w", src.Path, err)
	}
	return src, nil
}
