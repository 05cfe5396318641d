package metrics

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// trackerFixtures is ../../testdata/trackers: real runs with the values an
// independent reader decoded from them (testdata/trackers/SOURCES.md).
const trackerFixtures = "../../testdata/trackers"

// ExpectedRun is one run of a fixture's expected.json.
type expectedRun struct {
	Format  string                     `json:"format"`
	Run     map[string]any             `json:"run"`
	Config  map[string]json.RawMessage `json:"config"`
	Summary map[string]json.RawMessage `json:"summary"`
	Scalars map[string][][2]any        `json:"scalars"`
	System  map[string][][2]any        `json:"system_scalars"`
	Counts  map[string]any             `json:"counts"`
}

// loadExpected reads a fixture's expected.json.
func loadExpected(t testing.TB, fixture string) map[string]expectedRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(trackerFixtures, fixture, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs map[string]expectedRun `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Runs
}

// ExpectedSeries returns every scalar the reader found, user and system,
// per key in file order, as rlgate stores them (float64 steps and values).
func expectedSeries(t testing.TB, r expectedRun) map[string][][2]float64 {
	t.Helper()
	out := map[string][][2]float64{}
	for _, m := range []map[string][][2]any{r.Scalars, r.System} {
		for k, pts := range m {
			for _, p := range pts {
				out[k] = append(out[k], [2]float64{p[0].(float64), expectedValue(t, p[1])})
			}
		}
	}
	return out
}

func expectedValue(t testing.TB, v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		switch x {
		case "NaN":
			return math.NaN()
		case "Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
	}
	t.Fatalf("expected value %v is not a number", v)
	return 0
}

// seriesOf groups points per key in order.
func seriesOf(pts []Point) map[string][][2]float64 {
	out := map[string][][2]float64{}
	for _, p := range pts {
		out[p.Key] = append(out[p.Key], [2]float64{float64(p.Step), p.Value})
	}
	return out
}

// TestTrackerRealRuns reads every shipped tracker run and compares every
// scalar (user and system series, in file order, repeated steps kept),
// the end state, identity, summary and config with expected.json.
func TestTrackerRealRuns(t *testing.T) {
	cases := []struct {
		fixture string
		format  Format
	}{
		{"wandb/coati-rlhf-0.14.2", FormatWandB},
		{"swanlab/adsft-llamafactory-0.6.8", FormatSwanLab},
		{"mlflow/deepcnnclassifier-keras-2022", FormatMLflow},
	}
	for _, c := range cases {
		for src, want := range loadExpected(t, c.fixture) {
			t.Run(c.fixture+"/"+src, func(t *testing.T) {
				path := filepath.Join(trackerFixtures, c.fixture, src)
				for _, f := range []Format{c.format, FormatAuto} {
					tl, err := NewTailer(path, Options{Format: f}, Cursor{})
					if err != nil {
						t.Fatal(err)
					}
					if tl.Format() != c.format {
						t.Fatalf("%s read as %s, want %s", f, tl.Format(), c.format)
					}
					pts, err := tl.Final()
					if err != nil {
						t.Fatal(err)
					}
					if d := cmp.Diff(expectedSeries(t, want), seriesOf(pts), cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); d != "" {
						t.Fatalf("series (-want +got):\n%s", d)
					}
					checkTrackerRun(t, want, tl.Run())
				}
				// Streamed in chunks of 7, the same points arrive in order,
				// each chunk whole, and Final returns the rest.
				tl, err := NewTailer(path, Options{Format: c.format}, Cursor{})
				if err != nil {
					t.Fatal(err)
				}
				var streamed []Point
				tl.Stream(7, func(chunk []Point) {
					if len(chunk) != 7 {
						t.Errorf("a chunk of %d points, want 7", len(chunk))
					}
					streamed = append(streamed, chunk...)
				})
				rest, err := tl.Final()
				if err != nil {
					t.Fatal(err)
				}
				if len(rest) >= 7 {
					t.Errorf("Final returned %d points, want fewer than a chunk", len(rest))
				}
				if d := cmp.Diff(expectedSeries(t, want), seriesOf(append(streamed, rest...)), cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); d != "" {
					t.Fatalf("streamed series (-want +got):\n%s", d)
				}
			})
		}
	}
}

// checkTrackerRun compares the run's description with expected.json.
func checkTrackerRun(t *testing.T, want expectedRun, got *TrackerRun) {
	t.Helper()
	str := func(k string) string { s, _ := want.Run[k].(string); return s }
	gotRun := map[string]any{"id": got.ID, "status": got.Status, "name": got.Name}
	wantRun := map[string]any{"id": str("id"), "status": str("status"), "name": str("name")}
	if code, ok := want.Run["exit_code"].(float64); ok {
		wantRun["exit_code"] = int64(code)
	}
	if got.ExitCode != nil {
		gotRun["exit_code"] = *got.ExitCode
	}
	if d := cmp.Diff(wantRun, gotRun); d != "" {
		t.Errorf("run (-want +got):\n%s", d)
	}
	wantOK := want.Run["status"] == "finished" || want.Run["status"] == "SUCCESS" || want.Run["status"] == "FINISHED"
	if got.OK != wantOK {
		t.Errorf("ok = %v for status %v", got.OK, want.Run["status"])
	}
	if d := cmp.Diff(decodeRaw(t, want.Summary), decodeRaw(t, got.Summary), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if want.Format != "swanlab-backup-v1" { // PyYAML's YAML 1.1 differs from YAML 1.2 on a few scalars
		if d := cmp.Diff(decodeRaw(t, want.Config), decodeRaw(t, got.Config), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("config (-want +got):\n%s", d)
		}
	}
	clean, _ := want.Counts["clean_end"].(bool)
	if _, framed := want.Counts["clean_end"]; framed && !clean {
		if len(got.Findings) != 1 || !strings.Contains(got.Findings[0], "truncated tail") ||
			!strings.Contains(got.Findings[0], "byte 15799") {
			t.Errorf("findings %q, want one naming the truncated tail at byte 15799", got.Findings)
		}
	} else if len(got.Findings) > 0 {
		t.Errorf("findings %q on a clean run", got.Findings)
	}
}

func decodeRaw(t *testing.T, m map[string]json.RawMessage) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range m {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = x
	}
	return out
}

// TestSwanLabLegacyLayoutReadsWALUntouched reads a run in SwanLab's
// 0.3-0.5 layout: metric names only in the real runs.swanlab of the
// LLaMA-Factory run, most of whose rows are in its -wal, and each metric's
// logs/<folder>/0.log written as SwanLab's local writer writes them
// (json.dumps of {"index", "data", "create_time"} per line) from
// expected.json's values. Every user scalar must come back under its name,
// the state must be the database's (SUCCESS), and the database, its WAL
// and shm must be byte-identical afterwards: SQLite applies and may
// checkpoint a WAL when it opens a database, so the reader opens a copy.
func TestSwanLabLegacyLayoutReadsWALUntouched(t *testing.T) {
	const fixture = "swanlab/adsft-llamafactory-0.6.8"
	const runDir = "swanlog/run-20260531_190548-kd4v3b6ndym9m725v4d7q"
	var want expectedRun
	for _, r := range loadExpected(t, fixture) {
		want = r
	}
	src := filepath.Join(trackerFixtures, fixture, "swanlog")
	root := filepath.Join(t.TempDir(), "swanlog")
	run := filepath.Join(root, filepath.Base(runDir))
	if err := os.MkdirAll(filepath.Join(run, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"runs.swanlab", "runs.swanlab-wal", "runs.swanlab-shm", filepath.Join(filepath.Base(runDir), "files", "config.yaml")} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The folders are the database's; the backup's Column records agree
	// (testdata/trackers/SOURCES.md, cross-checks).
	folders := map[string]string{"train/loss": "17", "train/grad_norm": "18", "train/learning_rate": "19", "train/epoch": "20",
		"train/global_step": "21", "single_value/train_runtime": "22", "single_value/train_samples_per_second": "23",
		"single_value/train_steps_per_second": "24", "single_value/total_flos": "25", "single_value/train_loss": "26"}
	for key, pts := range want.Scalars {
		var lines []byte
		for _, p := range pts {
			line, _ := json.Marshal(map[string]any{"index": p[0], "data": p[1], "create_time": "2026-05-31T11:10:00+00:00"})
			lines = append(append(lines, line...), '\n')
		}
		dir := filepath.Join(run, "logs", folders[key])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "0.log"), lines, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums := func() map[string][32]byte {
		m := map[string][32]byte{}
		for _, f := range []string{"runs.swanlab", "runs.swanlab-wal", "runs.swanlab-shm"} {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = sha256.Sum256(b)
		}
		return m
	}
	before := sums()
	tl, err := NewTailer(run, Options{Format: FormatAuto}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := tl.Final()
	if err != nil {
		t.Fatal(err)
	}
	wantSeries := expectedSeries(t, expectedRun{Scalars: want.Scalars})
	if d := cmp.Diff(wantSeries, seriesOf(pts)); d != "" {
		t.Fatalf("series (-want +got):\n%s", d)
	}
	r := tl.Run()
	if r.Status != "SUCCESS" || !r.OK || r.Name != "/proj/arch/users/xinxu/med/aphasiacld/artifacts/adapters/round5-2" || r.Project != "aphasiacld" {
		t.Errorf("run: status %q ok %v name %q project %q", r.Status, r.OK, r.Name, r.Project)
	}
	if len(r.Config) != 223 {
		t.Errorf("%d config keys, want 223", len(r.Config))
	}
	if d := cmp.Diff(before, sums()); d != "" {
		t.Errorf("reading changed the SwanLab database files:\n%s", d)
	}
}
