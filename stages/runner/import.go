package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics"
)

// ImportSpec is a finished run that something other than rlgate executed
// and an experiment tracker (or a trainer's log) recorded: rlgate import-run.
type ImportSpec struct {
	Stage   string
	Run     string // run id; empty: <stage>-<UTC time>-<4 hex>
	Source  MetricFile
	Inputs  []Named
	Outputs []Named
}

// ImportStartBody is the run.start body of an imported run: no command was
// executed, so Argv is empty and Imported says where the run came from.
type ImportStartBody struct {
	StartBody
	Imported ImportedRun `json:"imported"`
}

// ImportedRun is what a tracker recorded about a run: identity, times and
// end state in its own words.
type ImportedRun struct {
	Format  metrics.Format `json:"format"`
	Source  string         `json:"source"`
	ID      string         `json:"id,omitempty"`
	Name    string         `json:"name,omitempty"`
	Project string         `json:"project,omitempty"`
	// Status is the end state in the tracker's words; "" for a trainer log,
	// which records none.
	Status    string    `json:"status,omitempty"`
	ExitCode  *int64    `json:"exit_code,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Import records a finished external run without executing anything: the
// tracker's points as metrics entries, its config (through the redaction
// rule), summary and console output as artifacts by digest, its times and
// end state. Everything is read and checked before the first entry is
// written, so a file that cannot be read leaves no entry. The run is ok
// only when the tracker recorded a successful end (TrackerRun.OK); a run
// without an end record was killed or is still going and is failed.
func Import(ctx context.Context, l *ledger.Ledger, spec ImportSpec) (*Result, error) {
	if spec.Stage == "" {
		return nil, fmt.Errorf("import: a stage name is required")
	}
	if spec.Run == "" {
		spec.Run = newRunID(spec.Stage)
	}
	src := spec.Source
	t, err := metrics.NewTailer(src.Path, metrics.Options{Format: src.Format}, metrics.Cursor{})
	if err != nil {
		return nil, err
	}
	// The points are packed as they are read, a chunk of one entry at a
	// time, so the run is never held as points.
	var bodies []ledger.PackedMetrics
	var points int64
	t.Stream(metricsPerEntry, func(chunk []metrics.Point) {
		bodies = packChunks(bodies, src.Path, t.Format(), chunk)
		points += int64(len(chunk))
	})
	rest, err := t.Final()
	if err != nil {
		return nil, err
	}
	bodies = packChunks(bodies, src.Path, t.Format(), rest)
	points += int64(len(rest))
	abs, _ := filepath.Abs(src.Path)
	tr := t.Run()
	if tr == nil {
		tr = &metrics.TrackerRun{Tracker: t.Format(), Source: src.Path}
	}
	var red ledger.Redactor
	start := ImportStartBody{
		StartBody: StartBody{RunStart: ledger.RunStart{Stage: spec.Stage}, Argv: []string{}, Outputs: spec.Outputs, PID: os.Getpid(),
			Metrics: []MetricFile{{Path: src.Path, Format: t.Format()}}},
		Imported: importedRun(tr),
	}
	start.Imported.Source = abs
	if t.Run() == nil {
		start.Imported.Status = ""
	}
	start.Dir, _ = filepath.Abs(".")
	arts, blobs, err := hashInputs(ctx, l, spec.Inputs, &start.StartBody)
	if err != nil {
		return nil, err
	}
	sideArts, sideBlobs, err := trackerArtifacts(l, &red, tr, abs)
	if err != nil {
		return nil, err
	}
	arts, blobs = append(arts, sideArts...), append(blobs, sideBlobs...)
	start.Redacted = red.Fields()
	end := EndBody{MetricPoints: points, MetricFormats: map[string]metrics.Format{src.Path: t.Format()},
		LogBytes: map[string]int64{"stdout": 0, "stderr": 0}}
	end.MetricFindings = slices.Clone(tr.Findings)
	if n := t.Stats().Duplicates; n > 0 {
		end.MetricFindings = append(end.MetricFindings, fmt.Sprintf("metrics %s: %d keys written twice in one record; the last value was kept", src.Path, n))
	}
	if points == 0 {
		end.MetricFindings = append(end.MetricFindings, fmt.Sprintf("metrics %s: the run holds no metric points", src.Path))
	}
	end.Status, end.Reason = importedStatus(t.Run())
	if tr.ExitCode != nil {
		code := int(*tr.ExitCode)
		end.ExitCode = &code
	}
	if !tr.Start.IsZero() && !tr.End.IsZero() {
		end.DurationS = tr.End.Sub(tr.Start).Seconds()
	}
	var outRecs []ledger.Record
	if len(spec.Outputs) > 0 {
		end.Outputs = map[string]ledger.Digest{}
	}
	for _, out := range spec.Outputs {
		r, d, err := OutputRecord(ctx, l, spec.Run, out.Name, out.Path)
		if err != nil {
			return nil, err
		}
		end.Outputs[out.Name] = d
		outRecs = append(outRecs, r)
	}

	// Everything is read: record it. From here on only the ledger can fail.
	rec := context.WithoutCancel(ctx)
	run, err := l.StartRun(rec, spec.Run, start)
	if err != nil {
		return nil, err
	}
	res := &Result{Run: spec.Run, Stage: spec.Stage, StartSeq: run.Seq}
	recs := make([]ledger.Record, 0, len(arts)+len(outRecs))
	for i, a := range arts {
		recs = append(recs, ledger.Record{Kind: records.KindArtifact, Run: spec.Run, Body: a, Blobs: []ledger.Digest{blobs[i]}})
	}
	recs = append(recs, metricEntries(spec.Run, bodies, t.Cursor())...)
	recs = append(recs, outRecs...)
	if _, err := l.Append(rec, recs...); err != nil {
		_, _ = run.Fail(rec, err)
		return nil, err
	}
	res.EndBody = end
	e, err := run.End(rec, end)
	if err != nil {
		return nil, err
	}
	res.EndSeq = e.Seq
	return res, nil
}

// trackerArtifacts stores what a tracker recorded beside a run's points as
// blobs and returns their artifact bodies: tracker-config.json (role
// config: the config after the redaction rule, noted in red),
// tracker-summary.json and tracker-console.log (role output: the console
// output, the config's secrets masked). path is where they were read.
func trackerArtifacts(l *ledger.Ledger, red *ledger.Redactor, tr *metrics.TrackerRun, path string) ([]ArtifactBody, []ledger.Digest, error) {
	config := redactConfig(red, tr.Config)
	sides := []struct {
		role records.Role
		name string
		data []byte
	}{
		{records.RoleConfig, "tracker-config.json", jsonBytes(config)},
		{records.RoleOutput, "tracker-summary.json", jsonBytes(tr.Summary)},
		{records.RoleOutput, "tracker-console.log", maskOutput(red, tr.Output)},
	}
	var arts []ArtifactBody
	var blobs []ledger.Digest
	for _, s := range sides {
		if s.data == nil {
			continue
		}
		d, err := l.PutBlobBytes(s.data)
		if err != nil {
			return nil, nil, err
		}
		kind := records.ArtifactFile
		if s.role == records.RoleConfig {
			kind = records.ArtifactConfig
		}
		arts = append(arts, ArtifactBody{Artifact: ledger.Artifact{Role: s.role, Name: s.name, Kind: kind, Digest: d}, Path: path, Bytes: int64(len(s.data))})
		blobs = append(blobs, d)
	}
	return arts, blobs, nil
}

// importedRun is what a tracker recorded about a run, as run bodies hold it.
func importedRun(tr *metrics.TrackerRun) ImportedRun {
	return ImportedRun{Format: tr.Tracker, Source: tr.Source, ID: tr.ID, Name: tr.Name, Project: tr.Project,
		Status: tr.Status, ExitCode: tr.ExitCode, StartedAt: tr.Start, EndedAt: tr.End}
}

// importedStatus maps the tracker's end state to the ledger's: ok only
// for a recorded successful end.
func importedStatus(tr *metrics.TrackerRun) (status records.Status, reason string) {
	switch {
	case tr == nil:
		return records.StatusFailed, "imported from a trainer log, which records no end state; only a tracker's end record makes an imported run ok"
	case tr.OK:
		return records.StatusOK, ""
	case tr.Status == "incomplete":
		return records.StatusFailed, fmt.Sprintf("%s recorded no end of the run: it was killed or is still running", tr.Tracker)
	case tr.ExitCode != nil:
		return records.StatusFailed, fmt.Sprintf("%s recorded the run %s with exit code %d", tr.Tracker, tr.Status, *tr.ExitCode)
	}
	return records.StatusFailed, fmt.Sprintf("%s recorded the run %s", tr.Tracker, tr.Status)
}

// redactConfig applies the redaction rule to every string in the tracker's
// config, naming each by its dotted path (config.optimizer.api_key), and
// returns the config as it may be recorded. Only strings can hold a secret:
// a number under a name like bos_token_id is kept.
func redactConfig(r *ledger.Redactor, cfg map[string]json.RawMessage) map[string]any {
	if cfg == nil {
		return nil
	}
	out := make(map[string]any, len(cfg))
	for k, raw := range cfg {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			v = string(raw)
		}
		out[k] = redactValue(r, "config."+k, k, v)
	}
	return out
}

func redactValue(r *ledger.Redactor, field, name string, v any) any {
	switch x := v.(type) {
	case string:
		return r.Value(field, name, x)
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(r, field+"."+k, k, e)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(r, fmt.Sprintf("%s[%d]", field, i), name, e)
		}
	}
	// Numbers, booleans and nulls are settings (bos_token_id, max_tokens),
	// not secrets, whatever their name.
	return v
}

// maskOutput masks the secrets the config held in the console output.
func maskOutput(r *ledger.Redactor, out []byte) []byte {
	if len(out) == 0 {
		return nil
	}
	m := r.Masker()
	if m == nil {
		return out
	}
	head, _ := m.Mask(out)
	tail, _ := m.Flush()
	return append(head, tail...)
}

// jsonBytes is v as canonical JSON, nil for an empty value.
func jsonBytes[T any](v T) []byte {
	b, err := ledger.CanonicalJSON(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return b
}
