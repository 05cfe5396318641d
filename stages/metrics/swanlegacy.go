package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, for SwanLab's runs.swanlab
)

// SwanLab 0.3-0.5 keeps a run as swanlog/<run dir>/logs/<folder>/*.log,
// one JSON line {"index": N, "data": V, ...} per logged value, with the
// metric's name only in the SQLite database swanlog/runs.swanlab (table
// tag: name, folder, per experiment, whose run_id is the run directory's
// name). SwanLab keeps that database in WAL mode and most of its rows sit
// in runs.swanlab-wal until a checkpoint.

// maxSwanDB bounds the bytes of runs.swanlab and its WAL copied to read.
const maxSwanDB = 512 << 20

// swanStatus names SwanLab's experiment states.
var swanStatus = map[int64]string{1: "SUCCESS", 0: "RUNNING", -1: "CRASHED", -2: "NOT_STARTED"}

// isSwanLegacy reports whether dir is a SwanLab run directory of the
// 0.3-0.5 layout: logs/ and no backup.swanlab, runs.swanlab beside it.
func isSwanLegacy(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "logs"))
	return err == nil && fi.IsDir() && !fileExists(filepath.Join(dir, "backup.swanlab")) &&
		fileExists(filepath.Join(filepath.Dir(filepath.Clean(dir)), "runs.swanlab"))
}

// swanTag is one metric of a legacy run: its name and folder under logs/.
type swanTag struct{ name, folder string }

// swanExperiment is what runs.swanlab says about one run.
type swanExperiment struct {
	project, name     string
	status            int64
	created, finished sql.NullString
	tags              []swanTag
}

// readSwanDB reads the experiment whose run_id is runID from the SwanLab
// database db. SQLite applies a WAL when it opens a database and may
// checkpoint it into the main file when it closes, which would rewrite
// the user's files: so the database and its -wal are copied into a
// temporary directory and the copy is opened, read-only.
func readSwanDB(ctx context.Context, db, runID string) (*swanExperiment, error) {
	tmp, err := os.MkdirTemp("", "rlgate-swanlab-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	budget := int64(maxSwanDB)
	for _, suffix := range []string{"", "-wal"} {
		if suffix != "" && !fileExists(db+suffix) {
			continue
		}
		if err := copyBounded(db+suffix, filepath.Join(tmp, "runs.swanlab"+suffix), &budget); err != nil {
			return nil, err
		}
	}
	conn, err := sql.Open("sqlite", "file:"+filepath.Join(tmp, "runs.swanlab")+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var e swanExperiment
	var id int64
	err = conn.QueryRowContext(ctx, `SELECT e.id, p.name, e.name, e.status, e.create_time, e.finish_time
		FROM experiment e JOIN project p ON p.id = e.project_id WHERE e.run_id = ?`, runID).
		Scan(&id, &e.project, &e.name, &e.status, &e.created, &e.finished)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("%s holds no experiment with run_id %q. Try: name a run directory of that swanlog", db, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %v", db, err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT name, folder FROM tag WHERE experiment_id = ? ORDER BY sort, id", id)
	if err != nil {
		return nil, fmt.Errorf("read %s: %v", db, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t swanTag
		var folder sql.NullString
		if err := rows.Scan(&t.name, &folder); err != nil {
			return nil, fmt.Errorf("read %s: %v", db, err)
		}
		t.folder = folder.String
		e.tags = append(e.tags, t)
	}
	return &e, rows.Err()
}

// copyBounded copies a regular file, counting its bytes against budget.
func copyBounded(src, dst string, budget *int64) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if *budget -= fi.Size(); *budget < 0 {
		return fmt.Errorf("%s and its WAL are over the limit of %d bytes", src, maxSwanDB)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(in, fi.Size())); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// readSwanLegacy reads a whole 0.3-0.5 run, once it is over: each tag's
// log lines in file order (files in the numeric order of their names), the
// run's state from runs.swanlab, config.yaml and summaries as for 0.6.
func (t *Tailer) readSwanLegacy(final bool) error {
	if !final || t.stopped {
		return nil
	}
	t.stopped = true
	dir := filepath.Clean(t.path)
	exp, err := readSwanDB(context.Background(), filepath.Join(filepath.Dir(dir), "runs.swanlab"), filepath.Base(dir))
	if err != nil {
		return fmt.Errorf("read swanlab run: %w", err)
	}
	run := t.run
	run.ID, run.Name, run.Project = filepath.Base(dir), exp.name, exp.project
	run.Status = swanStatus[exp.status]
	if run.Status == "" {
		run.Status = "status " + strconv.FormatInt(exp.status, 10)
	}
	run.OK = exp.status == 1
	run.Start, _ = time.Parse(time.RFC3339Nano, exp.created.String)
	run.End, _ = time.Parse(time.RFC3339Nano, exp.finished.String)
	for _, tag := range exp.tags {
		if !safeName(tag.folder) {
			run.finding("swanlab %s: tag %q has no usable folder %q", dir, tag.name, tag.folder)
			continue
		}
		t.swan.columns = append(t.swan.columns, swanColumn{Key: tag.name, Kid: tag.folder})
		if err := t.readSwanLogs(filepath.Join(dir, "logs", tag.folder), tag.name); err != nil {
			return err
		}
	}
	return nil
}

// readSwanLogs reads one tag's *.log files.
func (t *Tailer) readSwanLogs(folder, key string) error {
	files, _ := filepath.Glob(filepath.Join(folder, "*.log"))
	num := func(p string) int64 {
		n, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(p), ".log"), 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	slices.SortFunc(files, func(a, b string) int {
		if c := num(a) - num(b); c != 0 {
			return int(min(max(c, -1), 1))
		}
		return strings.Compare(a, b)
	})
	for _, p := range files {
		b, err := readSideFile(p)
		if err != nil {
			return fmt.Errorf("read swanlab run: %w", err)
		}
		line := int64(0)
		for l := range strings.Lines(string(b)) {
			line++
			if strings.TrimSpace(l) == "" {
				continue
			}
			var m struct {
				Index *int64          `json:"index"`
				Data  json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.Index == nil {
				return &ParseError{Path: p, Line: line, Err: fmt.Errorf("not a SwanLab metric line {\"index\": N, \"data\": V}")}
			}
			if err := checkStep(*m.Index); err != nil {
				return &ParseError{Path: p, Line: line, Err: err}
			}
			t.sk.begin()
			if v, ok := swanNumber(m.Data); ok {
				t.sk.add([]byte(key), v)
			} else {
				t.sk.stats.Skipped++
			}
			t.sk.commit(*m.Index)
		}
	}
	return nil
}
