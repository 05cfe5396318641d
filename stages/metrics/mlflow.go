package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// An MLflow file store run (mlflow/mlflow mlflow/store/tracking/
// file_store.py) is a directory <root>/<experiment>/<run>/ holding
// meta.yaml, metrics/<key> (a key with "/" nests directories), params/<key>
// and tags/<key>. A metric file holds one line per logged value:
// "timestamp value [step]", step 0 when absent.

// maxMLflowFiles bounds the files of metrics/, params/ and tags/ read from
// one run directory.
const maxMLflowFiles = 100000

// mlflowStatus names meta.yaml's status codes (mlflow RunStatus).
var mlflowStatus = map[int]string{1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}

// parseMLflowLine reads one metric line: "timestamp value [step]".
// Values are what Python's float() reads, NaN and infinities included.
func parseMLflowLine(b []byte) (ts int64, v float64, step int64, err error) {
	f := bytes.Fields(b)
	if len(f) != 2 && len(f) != 3 {
		return 0, 0, 0, fmt.Errorf("%d fields, want \"timestamp value [step]\"", len(f))
	}
	if ts, err = strconv.ParseInt(string(f[0]), 10, 64); err != nil {
		return 0, 0, 0, fmt.Errorf("timestamp %q is not an integer", f[0])
	}
	if v, err = strconv.ParseFloat(string(f[1]), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, 0, 0, fmt.Errorf("value %q is not a number", f[1])
	}
	if len(f) == 3 {
		if step, err = strconv.ParseInt(string(f[2]), 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("step %q is not an integer", f[2])
		}
		if err = checkStep(step); err != nil {
			return 0, 0, 0, err
		}
	}
	return ts, v, step, nil
}

// mlflowFiles lists the regular files under dir/sub as keys relative to it,
// "/" separated and sorted; links and other files are refused by name.
func mlflowFiles(dir, sub string) ([]string, error) {
	root := filepath.Join(dir, sub)
	var keys []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if e.IsDir() {
			return nil
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		if len(keys) >= maxMLflowFiles {
			return fmt.Errorf("%s holds more than %d files", root, maxMLflowFiles)
		}
		rel, _ := filepath.Rel(root, p)
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(keys)
	return keys, err
}

// readMLflow reads a whole MLflow run: its metric files, in key order and
// each in file order (repeated steps kept), then params, tags and
// meta.yaml. The store's files are rewritten and appended per key, so a
// run is read once, when it is over: Next returns nothing.
func (t *Tailer) readMLflow(final bool) error {
	if !final || t.stopped {
		return nil
	}
	t.stopped = true
	dir, run := t.path, t.run
	keys, err := mlflowFiles(dir, "metrics")
	if err != nil {
		return fmt.Errorf("read mlflow run %s: %w", dir, err)
	}
	for _, key := range keys {
		path := filepath.Join(dir, "metrics", filepath.FromSlash(key))
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read mlflow run: %w", err)
		}
		latest := [3]float64{math.Inf(-1)}
		var seen bool
		line := int64(0)
		for l := range bytes.Lines(b) {
			line++
			l = bytes.TrimRight(l, "\r\n")
			if len(bytes.TrimSpace(l)) == 0 {
				t.sk.stats.Ignored++
				continue
			}
			ts, v, step, err := parseMLflowLine(l)
			if err != nil {
				return &ParseError{Path: path, Line: line, Err: err}
			}
			t.sk.begin()
			t.sk.add([]byte(key), v)
			t.sk.commit(step)
			// MLflow's latest value is max((step, timestamp, value)).
			if c := [3]float64{float64(step), float64(ts), v}; !seen || lessTriple(latest, c) {
				latest, seen = c, true
			}
		}
		if seen {
			js, _ := json.Marshal(map[string]any{"step": int64(latest[0]), "timestamp": int64(latest[1]), "value": jsonNumber(latest[2])})
			if run.Summary == nil {
				run.Summary = make(map[string]json.RawMessage)
			}
			run.Summary[key] = js
		}
	}
	params, err := t.mlflowStrings("params")
	if err != nil {
		return err
	}
	for k, v := range params {
		if run.Config == nil {
			run.Config = make(map[string]json.RawMessage)
		}
		run.Config[k], _ = json.Marshal(v)
	}
	if run.Tags, err = t.mlflowStrings("tags"); err != nil {
		return err
	}
	return t.mlflowMeta()
}

// lessTriple orders (step, timestamp, value) as Python orders tuples.
func lessTriple(a, b [3]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// jsonNumber returns v, or its name when JSON cannot hold it.
func jsonNumber(v float64) any {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return v
}

// mlflowStrings reads params/ or tags/: each file's whole content is the
// value.
func (t *Tailer) mlflowStrings(sub string) (map[string]string, error) {
	keys, err := mlflowFiles(t.path, sub)
	if err != nil {
		return nil, fmt.Errorf("read mlflow run %s: %w", t.path, err)
	}
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		b, err := readSideFile(filepath.Join(t.path, sub, filepath.FromSlash(k)))
		if err != nil {
			return nil, fmt.Errorf("read mlflow run: %w", err)
		}
		m[k] = string(b)
	}
	return m, nil
}

// mlflowMeta reads meta.yaml: identity, status and times (milliseconds
// since the epoch).
func (t *Tailer) mlflowMeta() error {
	path := filepath.Join(t.path, "meta.yaml")
	b, err := readSideFile(path)
	if err != nil {
		return fmt.Errorf("read mlflow run: %w", err)
	}
	var meta struct {
		RunID     string `yaml:"run_id"`
		RunUUID   string `yaml:"run_uuid"`
		RunName   string `yaml:"run_name"`
		Status    int    `yaml:"status"`
		StartTime *int64 `yaml:"start_time"`
		EndTime   *int64 `yaml:"end_time"`
		Exp       string `yaml:"experiment_id"`
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		return fmt.Errorf("read mlflow run: %s: %v", path, err)
	}
	run := t.run
	run.ID = meta.RunID
	if run.ID == "" {
		run.ID = meta.RunUUID
	}
	run.Name, run.Project = meta.RunName, meta.Exp
	run.Status = mlflowStatus[meta.Status]
	if run.Status == "" {
		run.Status = fmt.Sprintf("status %d", meta.Status)
	}
	run.OK = meta.Status == 3
	if meta.StartTime != nil {
		run.Start = time.UnixMilli(*meta.StartTime).UTC()
	}
	if meta.EndTime != nil {
		run.End = time.UnixMilli(*meta.EndTime).UTC()
	}
	return nil
}
