package stage

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/runner"
)

const mlflowRun = "../../testdata/trackers/mlflow/deepcnnclassifier-keras-2022/mlruns/0/cb0096518b0e4c66a94428555f05420b"

// TestImportAndMetrics: a real MLflow run (which did not record a
// successful end, so it is a result of status failed, not an error)
// imported reads back as every
// point it recorded; a key the run never recorded, or a run the ledger
// does not hold, is an error saying what to try.
func TestImportAndMetrics(t *testing.T) {
	dir := ledgertest.New(t).Dir()
	res, err := Import(t.Context(), dir, runner.ImportSpec{Stage: "sft", Run: "ml", Source: runner.MetricFile{Path: mlflowRun}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run != "ml" || res.Status != records.StatusFailed || res.MetricPoints != 2 {
		t.Fatalf("import: run %s %s (%s), %d points; want ml failed, 2", res.Run, res.Status, res.Reason, res.MetricPoints)
	}
	series, keys, err := Metrics(t.Context(), dir, "ml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]ledger.MetricPoint{
		"accuracy": {{Step: 0, Key: "accuracy", Value: 0.7858095765113831}},
		"loss":     {{Step: 0, Key: "loss", Value: 3.2727866172790527}},
	}
	if !slices.Equal(keys, []string{"accuracy", "loss"}) || len(series) != 2 ||
		!slices.Equal(series["accuracy"], want["accuracy"]) || !slices.Equal(series["loss"], want["loss"]) {
		t.Errorf("metrics: keys %v, series %v; want %v", keys, series, want)
	}
	for _, tt := range []struct {
		run  string
		keys []string
		msg  string
	}{
		{"ml", []string{"train/loss"}, `run ml recorded no key "train/loss". Try:`},
		{"nope", nil, `no run "nope" in the ledger. Try: rlgate runs`},
	} {
		if _, _, err := Metrics(t.Context(), dir, tt.run, tt.keys); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("metrics of run %s, keys %v: %v; want %q", tt.run, tt.keys, err, tt.msg)
		}
	}
	if _, err := Import(t.Context(), dir, runner.ImportSpec{Stage: "sft", Source: runner.MetricFile{Path: filepath.Join(t.TempDir(), "none")}}); err == nil ||
		!strings.Contains(err.Error(), "Try: the path of a run directory or file") {
		t.Errorf("import of a missing run: %v; want a hint to the path", err)
	}
}

// TestRun: a stage that exits non-zero is a failed result keeping its
// exit code, not an error; a publish request that cannot be honoured is
// refused before the stage starts, and the ledger is left as it was.
func TestRun(t *testing.T) {
	l := ledgertest.New(t)
	dir := l.Dir()
	r, err := Run(t.Context(), dir, runner.Spec{Stage: "sft", Run: "seven", Argv: []string{"sh", "-c", "exit 7"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != records.StatusFailed || r.StageExit() != 7 || r.PublishRequest != nil {
		t.Errorf("stage exiting 7: %s, exit %d, request %v; want failed, 7, none", r.Status, r.StageExit(), r.PublishRequest)
	}
	before, err := l.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, err = Run(t.Context(), dir, runner.Spec{Stage: "sft", Argv: []string{"touch", marker}},
		&Publish{To: t.TempDir(), Key: filepath.Join(t.TempDir(), "no.key")})
	if err == nil || !strings.HasPrefix(err.Error(), "--publish-to: ") {
		t.Errorf("publish with a missing key: %v; want a --publish-to error", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the stage ran although its publish request was refused")
	}
	if after, err := l.Head(t.Context()); err != nil || after != before {
		t.Errorf("the refused stage wrote to the ledger: head %+v, was %+v (%v)", after, before, err)
	}
}
