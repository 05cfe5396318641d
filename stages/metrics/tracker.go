package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// TrackerRun is what an experiment tracker's own files say about a run
// beyond its points: who it is, how it ended, its config and summary, its
// console output. A Tailer of a tracker format fills it as it reads; the
// whole of it is known after Final.
type TrackerRun struct {
	// Tracker is the format that read the run (wandb, swanlab, mlflow).
	Tracker Format `json:"tracker"`
	// Source is the file or directory the run was read from.
	Source  string `json:"source"`
	ID      string `json:"id,omitempty"`
	Name    string `json:"name,omitempty"`
	Project string `json:"project,omitempty"`
	// Status is the end state in the tracker's own words: W&B finished,
	// failed or incomplete (no exit record); SwanLab SUCCESS, CRASHED or
	// incomplete (no footer); MLflow RUNNING, SCHEDULED, FINISHED, FAILED
	// or KILLED.
	Status string `json:"status"`
	// ExitCode is W&B's recorded exit code, when an exit record exists.
	ExitCode *int64 `json:"exit_code,omitempty"`
	// OK is true only when the tracker recorded a successful end: a W&B exit
	// record with code 0, a SwanLab footer with success, MLflow FINISHED. A
	// run without an end record (killed) is never OK.
	OK bool `json:"ok"`
	// Start and End as the tracker recorded them; zero when it did not.
	// W&B records no end time: End is its start plus the exit record's
	// runtime in whole seconds.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Config and Summary hold JSON values per key as the tracker recorded
	// them (W&B's config and summary records applied in file order,
	// SwanLab's files/config.yaml and logs/<kid>/_summary.json, MLflow's
	// params/ and each metric's latest point).
	Config  map[string]json.RawMessage `json:"config,omitempty"`
	Summary map[string]json.RawMessage `json:"summary,omitempty"`
	// Tags are MLflow's tags/ files.
	Tags map[string]string `json:"tags,omitempty"`
	// Output is the console output the tracker captured, in order.
	Output []byte `json:"-"`
	// Findings are problems with the files that did not stop the read: a
	// truncated or corrupt tail, a file that could not be read.
	Findings []string `json:"findings,omitempty"`
}

// Trackers are the formats whose files describe a whole run (TrackerRun),
// not only its points; each may name a directory.
var Trackers = []Format{FormatWandB, FormatSwanLab, FormatMLflow}

// IsTracker reports whether f is one of Trackers.
func (f Format) IsTracker() bool { return slices.Contains(Trackers, f) }

// maxSideFile bounds a tracker's side file read whole (a param, tag,
// meta.yaml, config.yaml, summary): a hostile run directory cannot make a
// reader allocate without limit.
const maxSideFile = 16 << 20

// readSideFile reads a small file of a run directory, refusing anything
// that is not a regular file (a link could point anywhere) or is larger
// than maxSideFile.
func readSideFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxSideFile {
		return nil, fmt.Errorf("%s is %d bytes, over the limit of %d", path, fi.Size(), maxSideFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSideFile))
}

// resolveTracker turns the path a user named for a tracker format into the
// file the Tailer reads: a W&B run directory into its run-*.wandb file (or
// the pre-0.10 wandb-history.jsonl), a SwanLab run directory into its
// backup.swanlab; MLflow reads its run directory itself.
func resolveTracker(path string, f Format) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read %s run: %w", f, err)
	}
	if !fi.IsDir() {
		if f == FormatMLflow {
			return "", fmt.Errorf("read mlflow run: %s is a file; name the run directory <root>/<experiment>/<run>", path)
		}
		return path, nil
	}
	switch f {
	case FormatWandB:
		files, _ := filepath.Glob(filepath.Join(path, "run-*.wandb"))
		switch len(files) {
		case 1:
			return files[0], nil
		case 0:
			if h := filepath.Join(path, "wandb-history.jsonl"); fileExists(h) {
				return h, nil
			}
			if h := filepath.Join(path, "files", "wandb-history.jsonl"); fileExists(h) {
				return h, nil
			}
			return "", fmt.Errorf("read wandb run: %s holds no run-*.wandb file and no wandb-history.jsonl. Try: name the run directory wandb/run-<date>-<id>", path)
		}
		return "", fmt.Errorf("read wandb run: %s holds %d run-*.wandb files. Try: name one of them", path, len(files))
	case FormatSwanLab:
		if b := filepath.Join(path, "backup.swanlab"); fileExists(b) {
			return b, nil
		}
		if isSwanLegacy(path) {
			return path, nil
		}
		return "", fmt.Errorf("read swanlab run: %s holds neither backup.swanlab (SwanLab 0.6) nor logs/ beside ../runs.swanlab (0.3-0.5). Try: name the run directory swanlog/run-<date>-<id>", path)
	}
	return path, nil
}

// fileExists reports whether path is a regular file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// detectDir names the tracker whose run directory path is.
func detectDir(path string) (Format, error) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(path, name))
		return err == nil
	}
	wandb, _ := filepath.Glob(filepath.Join(path, "run-*.wandb"))
	var found []Format
	if len(wandb) > 0 || has("wandb-history.jsonl") || has(filepath.Join("files", "wandb-history.jsonl")) {
		found = append(found, FormatWandB)
	}
	if has("backup.swanlab") || isSwanLegacy(path) {
		found = append(found, FormatSwanLab)
	}
	if has("meta.yaml") && has("metrics") {
		found = append(found, FormatMLflow)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("detect metrics format of %s: %w: a directory, but not a W&B run (run-*.wandb), a SwanLab run (backup.swanlab) or an MLflow run (meta.yaml and metrics/). Try: name the run directory itself", path, ErrUnknownFormat)
	}
	return "", fmt.Errorf("detect metrics format of %s: %w: it holds the files of %s and %s; name the format, as in %s:%s", path, ErrAmbiguousFormat, found[0], found[1], path, found[0])
}

// readTrackerSide reads what a tracker keeps beside its record file once
// the run is over: SwanLab's config.yaml and summaries, a pre-0.10 W&B
// run's summary, config and metadata. Problems are findings, not errors:
// the points are what matters.
func (t *Tailer) readTrackerSide() {
	if t.format == FormatWandB && t.lines != nil {
		readWandBHistorySide(t.run, filepath.Dir(t.path))
	}
	if t.format == FormatSwanLab {
		dir := t.path
		if !t.swanLegacy() {
			dir = filepath.Dir(t.path)
		}
		t.swan.readSide(t.run, dir)
	}
}

// swanLegacy reports whether the Tailer reads a SwanLab 0.3-0.5 run
// directory rather than a backup.swanlab.
func (t *Tailer) swanLegacy() bool {
	if t.format != FormatSwanLab {
		return false
	}
	fi, err := os.Stat(t.path)
	return err == nil && fi.IsDir()
}

// finding adds a finding to the run, once.
func (r *TrackerRun) finding(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !slices.Contains(r.Findings, msg) {
		r.Findings = append(r.Findings, msg)
	}
}

// isNotExist reports a missing side file, which is no finding.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// maxStep bounds a tracker's step to what the ledger stores exactly (a
// float64 integer): a larger one is refused where it is read, not when the
// run is half recorded.
const maxStep = 1 << 53

// checkStep refuses a step the ledger cannot store exactly.
func checkStep(step int64) error {
	if step > maxStep || step < -maxStep {
		return fmt.Errorf("step %d is beyond ±2^53, which a metric step must stay within", step)
	}
	return nil
}

// safeName reports whether a folder name from a tracker's files names a
// folder inside its parent: no separator, not "." or "..".
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && filepath.Base(name) == name && !strings.ContainsAny(name, `/\`)
}

// StringKeys turns YAML maps with non-string keys (W&B's config.yaml has
// integer keys) into string-keyed maps, which JSON requires.
func StringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = StringKeys(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = StringKeys(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = StringKeys(e)
		}
	}
	return v
}
