package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/runner"
)

// truthLedger makes an empty ledger and returns its directory.
func truthLedger(t *testing.T) string {
	t.Helper()
	ldir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	return ldir
}

// truthRunEntries returns a run's run.end body and its metric points.
func truthRunEntries(t *testing.T, ldir, run string) (runner.EndBody, []ledger.MetricPoint) {
	t.Helper()
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var end runner.EndBody
	var pts []ledger.MetricPoint
	for e, err := range l.Entries(context.Background(), ledger.Filter{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case records.KindRunEnd:
			if err := json.Unmarshal(e.Body, &end); err != nil {
				t.Fatal(err)
			}
		case records.KindMetrics:
			m, err := ledger.DecodeMetrics(e.Body)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Series {
				for i := range s.Len() {
					pts = append(pts, s.At(i))
				}
			}
		}
	}
	return end, pts
}

func TestRunTruthStageExitCodeIsKept(t *testing.T) {
	t.Parallel()
	ldir := truthLedger(t)
	code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", "train", "--run", "r7", "--gpu", "off", "--", "sh", "-c", "exit 7")
	if code != 7 {
		t.Errorf("exit %d (%s), want the stage's 7", code, errOut)
	}
	end, _ := truthRunEntries(t, ldir, "r7")
	if end.Status != "failed" || end.ExitCode == nil || *end.ExitCode != 7 {
		t.Errorf("run.end %+v, want failed with exit code 7", end)
	}
	_, help, _ := rlgate(t, "run", "--help")
	if !strings.Contains(help, "stage exiting 7 makes rlgate exit 7") {
		t.Errorf("run --help does not document the stage's exit code:\n%s", help)
	}
}

// watchWriter is a terminal stderr that creates a file the first time
// rlgate prints a warning, so a stage can wait for the warning.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen string
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "rlgate: warning:") {
		os.WriteFile(w.seen, nil, 0o644)
	}
	return len(p), nil
}

// TestRunTruthMetricsProblemsAreWarnings: a TRL state file that does not
// parse is reported while the stage runs (the stage waits for the warning
// before it exits 0, and gives up with 9 after 20 s), recorded in run.end,
// and leaves the stage ok; so does a metrics file never written.
func TestRunTruthMetricsProblemsAreWarnings(t *testing.T) {
	t.Parallel()
	ldir := truthLedger(t)
	dir := t.TempDir()
	state, seen := filepath.Join(dir, "trainer_state.json"), filepath.Join(dir, "seen")
	script := `printf '{"log_history": [{"step": 1, "loss": 0.5}, {"step": 2, "loss": oops}]}\n' > "$1"
i=0; while [ ! -e "$2" ]; do i=$((i+1)); [ $i -gt 400 ] && exit 9; sleep 0.05; done`
	stderr := &watchWriter{seen: seen}
	var stdout bytes.Buffer
	code := run(context.Background(), []string{"rlgate", "--ledger", ldir, "run", "--stage", "sft", "--run", "m1", "--gpu", "off",
		"--flush", "50ms", "--metrics", state + ":trl", "--metrics", filepath.Join(dir, "never.jsonl:jsonl"),
		"--", "sh", "-c", script, "sh", state, seen}, &stdout, stderr)
	if code != 0 {
		t.Fatalf("exit %d, want the stage's 0: %s", code, stderr.buf.String())
	}
	end, pts := truthRunEntries(t, ldir, "m1")
	if end.Status != "ok" || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Errorf("run.end %+v, want ok with exit code 0", end)
	}
	// The fault is the "o" of oops: line 1, column 64.
	f := end.MetricFindings
	if len(f) != 2 || !strings.HasPrefix(f[0], "parse metrics "+state+":1:64: ") || !strings.HasSuffix(f[0], "; the rest of "+state+" was not ingested") ||
		f[1] != "metrics "+filepath.Join(dir, "never.jsonl")+": the stage never wrote it" {
		t.Errorf("metric_findings %q", f)
	}
	if len(pts) != 1 || pts[0].Key != "loss" || pts[0].Value != 0.5 {
		t.Errorf("points %v, want the one before the fault", pts)
	}
	if !strings.Contains(stdout.String(), "2 metrics warning(s)") {
		t.Errorf("summary does not count the warnings: %q", stdout.String())
	}
}

// TestRunTruthConsoleRewriteIsOnePoint: a console line redrawn after a
// carriage return writes step 1's a twice; through the CLI that is one
// point, the last value, and a recorded warning, as for a key repeated on
// one line (step 2).
func TestRunTruthConsoleRewriteIsOnePoint(t *testing.T) {
	t.Parallel()
	ldir := truthLedger(t)
	log := filepath.Join(t.TempDir(), "train.log")
	script := `printf 'step:1 - a:1 - b:5\rstep:1 - a:2\nstep:2 - a:3 - a:4\n' > "$1"`
	code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", "rl", "--run", "c1", "--gpu", "off",
		"--metrics", log+":verl-console", "--", "sh", "-c", script, "sh", log)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	end, pts := truthRunEntries(t, ldir, "c1")
	wantPts := []ledger.MetricPoint{{Step: 1, Key: "a", Value: 2}, {Step: 1, Key: "b", Value: 5}, {Step: 2, Key: "a", Value: 4}}
	// An entry holds its points by key: their order across keys is not kept.
	byKey := cmpopts.SortSlices(func(a, b ledger.MetricPoint) bool { return a.Key < b.Key || a.Key == b.Key && a.Step < b.Step })
	if d := cmp.Diff(wantPts, pts, byKey); d != "" {
		t.Errorf("points (-want +got):\n%s", d)
	}
	wantFindings := []string{"metrics " + log + ": 2 keys written twice in one record; the last value was kept"}
	if d := cmp.Diff(wantFindings, end.MetricFindings); d != "" {
		t.Errorf("metric_findings (-want +got):\n%s", d)
	}
}
