package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics/trackertest"
	"github.com/rlgate/rlgate/stages/runner"
)

// trackerFixtures holds real tracker runs with the values an independent
// reader decoded (testdata/trackers/SOURCES.md).
const trackerFixtures = "../../testdata/trackers"

// treeSums returns the sha256 of every file under dir.
func treeSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		sums[p] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestImportRunRealTrackers imports every shipped tracker run through the
// CLI and compares every scalar rlgate metrics --json prints with
// expected.json (user and tracker-generated series alike), the recorded
// status (ok only for a recorded successful end; the killed, truncated W&B
// run and the failed ones exit 3) and the truncation finding, and checks
// that the user's files, SwanLab's SQLite WAL among them, are byte-identical
// afterwards.
func TestImportRunRealTrackers(t *testing.T) {
	t.Parallel()
	before := treeSums(t, trackerFixtures)
	dir := t.TempDir()
	if code, _, errOut := rlgate(t, "--ledger", dir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	cases := []struct{ fixture, format string }{
		{"wandb/coati-rlhf-0.14.2", "wandb"},
		{"swanlab/adsft-llamafactory-0.6.8", "auto"},
		{"mlflow/deepcnnclassifier-keras-2022", "mlflow"},
	}
	n := 0
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(trackerFixtures, c.fixture, "expected.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Runs map[string]struct {
				Run     map[string]any      `json:"run"`
				Scalars map[string][][2]any `json:"scalars"`
				System  map[string][][2]any `json:"system_scalars"`
				Counts  map[string]any      `json:"counts"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for src, want := range doc.Runs {
			n++
			run := "imported-" + filepath.Base(src)
			path := filepath.Join(trackerFixtures, c.fixture, src)
			code, out, errOut := rlgate(t, "--ledger", dir, "import-run", "--json", "--stage", "sft", "--run", run, path+":"+c.format)
			var res runner.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%s: %v\n%s%s", src, err, out, errOut)
			}
			status := want.Run["status"]
			wantCode, wantStatus := exitCheckFailed, records.StatusFailed
			if status == "SUCCESS" || status == "finished" || status == "FINISHED" {
				wantCode, wantStatus = exitOK, records.StatusOK
			}
			if code != wantCode || res.Status != wantStatus {
				t.Errorf("%s (tracker status %v): exit %d, status %s; want %d, %s: %s", src, status, code, res.Status, wantCode, wantStatus, errOut)
			}
			if clean, framed := want.Counts["clean_end"].(bool); framed && !clean {
				if len(res.MetricFindings) == 0 || !strings.Contains(res.MetricFindings[0], "truncated tail: chunk at byte 15799") {
					t.Errorf("%s: findings %q, want the truncated tail at byte 15799 first", src, res.MetricFindings)
				}
			}

			wantSeries := map[string][][2]any{}
			for _, m := range []map[string][][2]any{want.Scalars, want.System} {
				for k, pts := range m {
					wantSeries[k] = append(wantSeries[k], pts...)
				}
			}
			code, out, errOut = rlgate(t, "--ledger", dir, "metrics", "--run", run, "--json")
			if code != exitOK {
				t.Fatalf("metrics --run %s: exit %d: %s", run, code, errOut)
			}
			var got struct {
				Series map[string][][2]any `json:"series"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(wantSeries, got.Series, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("%s: series (-want +got):\n%s", src, d)
			}
		}
	}
	if n != 5 {
		t.Fatalf("%d runs in the fixtures, want 5", n)
	}
	if d := cmp.Diff(before, treeSums(t, trackerFixtures)); d != "" {
		t.Errorf("reading changed the user's files:\n%s", d)
	}
}

// TestImportedRunTrainingAudit: the training audit reads an imported run
// like any other. The real SwanLab run logs through LLaMA-Factory's
// SwanLabCallback, every key under "train/": its optimizer steps and
// learning rate are found only through the canonical names of the Hugging
// Face Trainer's tracker keys (train/global_step, train/learning_rate).
// The killed W&B run fails run-ok and metric-findings (its truncated tail).
func TestImportedRunTrainingAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rlgate(t, "--ledger", dir, "init")
	swan := filepath.Join(trackerFixtures, "swanlab/adsft-llamafactory-0.6.8/swanlog/run-20260531_190548-kd4v3b6ndym9m725v4d7q")
	killed := filepath.Join(trackerFixtures, "wandb/coati-rlhf-0.14.2/wandb/offline-run-20230413_090116-iotz2fip")
	rlgate(t, "--ledger", dir, "import-run", "--stage", "sft", "--run", "swan", swan)
	rlgate(t, "--ledger", dir, "import-run", "--stage", "sft", "--run", "killed", killed)
	code, out, errOut := rlgate(t, "--ledger", dir, "audit", "training", "--train", "sft=swan", "--json")
	if code != exitOK || !strings.Contains(out, "train/learning_rate > 0") || !strings.Contains(out, "train/global_step reached 270") {
		t.Errorf("audit training of the imported SwanLab run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = rlgate(t, "--ledger", dir, "audit", "training", "--train", "sft=killed")
	for _, want := range []string{"stage run killed is failed: wandb recorded no end of the run", "truncated tail"} {
		if code != exitCheckFailed || !strings.Contains(out, want) {
			t.Errorf("audit training of the killed W&B run: exit %d, want %d and %q:\n%s", code, exitCheckFailed, want, out)
		}
	}
}

// TestMetricsCommandCSVAndErrors: rlgate metrics --csv prints every point
// as recorded (the real MLflow run's two metrics); an unknown key or run is
// a one-line error saying what to try, and --json with --csv a usage error.
func TestMetricsCommandCSVAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rlgate(t, "--ledger", dir, "init")
	ml := filepath.Join(trackerFixtures, "mlflow/deepcnnclassifier-keras-2022/mlruns/0/cb0096518b0e4c66a94428555f05420b")
	rlgate(t, "--ledger", dir, "import-run", "--stage", "sft", "--run", "ml", ml)
	code, out, errOut := rlgate(t, "--ledger", dir, "metrics", "--run", "ml", "--csv")
	want := "key,step,value\naccuracy,0,0.7858095765113831\nloss,0,3.2727866172790527\n"
	if code != exitOK || out != want {
		t.Errorf("metrics --csv: exit %d\n%s%s\nwant\n%s", code, out, errOut, want)
	}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--run", "ml", "--key", "train/loss"}, exitError, `run ml recorded no key "train/loss". Try:`},
		{[]string{"--run", "nope"}, exitError, `no run "nope" in the ledger. Try: rlgate runs`},
		{[]string{"--run", "ml", "--json", "--csv"}, exitUsage, "give --json or --csv, not both"},
	} {
		code, _, errOut := rlgate(t, append([]string{"--ledger", dir, "metrics"}, tt.args...)...)
		if code != tt.code || !strings.Contains(errOut, tt.msg) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("metrics %v: exit %d, %q; want %d and one line with %q", tt.args, code, errOut, tt.code, tt.msg)
		}
	}
}

// TestImportRunRefusesBeforeWriting: a W&B run whose row claims a step
// the ledger cannot store exactly (2^60, beyond float64's integers) is a
// one-line error naming the file and the row, and the ledger is left as it
// was: no run.start, no half-recorded run. Before, the run was started and
// then failed when the metrics entry was refused.
func TestImportRunRefusesBeforeWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rlgate(t, "--ledger", dir, "init")
	w := trackertest.NewWandB()
	w.Record(trackertest.History(1, trackertest.Item{Key: "loss", JSON: "0.5"}))
	w.Record(trackertest.History(1<<60, trackertest.Item{Key: "loss", JSON: "0.4"}))
	w.Record(trackertest.Exit(0))
	path := filepath.Join(t.TempDir(), "run-x.wandb")
	if err := os.WriteFile(path, w.B, 0o644); err != nil {
		t.Fatal(err)
	}
	_, before, _ := rlgate(t, "--ledger", dir, "head", "--json")
	code, _, errOut := rlgate(t, "--ledger", dir, "import-run", "--stage", "sft", path)
	if code != exitError || !strings.Contains(errOut, path) || !strings.Contains(errOut, "history row 1: step 1152921504606846976 is beyond") ||
		strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("import-run: exit %d, %q; want exit 1 and one line naming the file and row", code, errOut)
	}
	if _, after, _ := rlgate(t, "--ledger", dir, "head", "--json"); after != before {
		t.Errorf("the refused import wrote to the ledger: head %s, was %s", after, before)
	}
}

// TestRunIngestsTrackerRuns: rlgate run --metrics reads tracker runs while
// a stage runs, as it reads trainer logs: the real W&B run directory,
// detected (auto) and recorded as wandb in run.end's metric_formats, gives
// every history value; the killed offline run's truncated tail is a
// metric_findings warning that leaves the stage's own status ok; and each
// tracker's own end state is kept in run.end's metric_runs, its config,
// summary and console output as artifacts (the killed run has no summary).
func TestRunIngestsTrackerRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rlgate(t, "--ledger", dir, "init")
	full := filepath.Join(trackerFixtures, "wandb/coati-rlhf-0.14.2/wandb/run-20230420_073822-clnzftry")
	killed := filepath.Join(trackerFixtures, "wandb/coati-rlhf-0.14.2/wandb/offline-run-20230413_090116-iotz2fip")
	code, out, errOut := rlgate(t, "--ledger", dir, "run", "--json", "--stage", "sft", "--run", "live", "--gpu", "off",
		"--metrics", full+":auto", "--metrics", killed+":wandb", "--", "true")
	var res runner.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitOK {
		t.Fatalf("run: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if res.Status != "ok" || res.MetricPoints != 4*78+2*78 || res.MetricFormats[full] != "wandb" || res.MetricFormats[killed] != "wandb" {
		t.Errorf("run: status %s, %d points, formats %v; want ok, 468 points, wandb twice", res.Status, res.MetricPoints, res.MetricFormats)
	}
	if len(res.MetricFindings) != 1 || !strings.Contains(res.MetricFindings[0], "truncated tail: chunk at byte 15799") {
		t.Errorf("findings %q, want the offline run's truncated tail", res.MetricFindings)
	}
	// The trackers' own end states are kept beside the stage's.
	got := map[string]string{}
	for p, r := range res.MetricRuns {
		got[p] = r.ID + " " + r.Status
		if r.ExitCode != nil {
			got[p] += fmt.Sprintf(" %d", *r.ExitCode)
		}
	}
	if d := cmp.Diff(map[string]string{full: "clnzftry failed 255", killed: "iotz2fip incomplete"}, got); d != "" {
		t.Errorf("metric_runs (-want +got):\n%s", d)
	}
	// Their config, summary and console output are recorded by digest.
	_, out, _ = rlgate(t, "--ledger", dir, "log", "--json", "--run", "live", "--kind", "artifact")
	var arts []struct {
		Body struct{ Name, Role string } `json:"body"`
	}
	if err := json.Unmarshal([]byte(out), &arts); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, a := range arts {
		names[a.Body.Role+" "+a.Body.Name]++
	}
	wantNames := map[string]int{"config tracker-config.json": 2, "output tracker-summary.json": 1, "output tracker-console.log": 2}
	if d := cmp.Diff(wantNames, names); d != "" {
		t.Errorf("artifacts (-want +got):\n%s", d)
	}
}
