package main

import (
	"context"
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
)

const logsFixtures = "../../testdata/trainer-logs/"

// logsRun is what a stage run recorded about its metrics.
type logsRun struct {
	end     runner.EndBody
	points  int
	formats map[string]bool // the format of every metrics entry
}

func logsRunEntries(t *testing.T, ldir, run string) logsRun {
	t.Helper()
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := logsRun{formats: map[string]bool{}}
	for e, err := range l.Entries(context.Background(), ledger.Filter{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case records.KindRunEnd:
			if err := json.Unmarshal(e.Body, &r.end); err != nil {
				t.Fatal(err)
			}
		case records.KindMetrics:
			m, err := ledger.DecodeMetrics(e.Body)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Series {
				r.points += s.Len()
			}
			r.formats[m.Format] = true
		}
	}
	return r
}

// logsExpected is how many points gen_logs.py says a fixture holds.
func logsExpected(t *testing.T, name string) int {
	t.Helper()
	raw, err := os.ReadFile(logsFixtures + name)
	if err != nil {
		t.Fatal(err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestLogsAutoDetectThroughCLI: --metrics F:auto reads each trainer's log
// as its format, says which it chose while the stage runs, and records the
// choice in run.end and in every metrics entry; the training audit then
// finds the optimizer steps and learning rate under the trainer's keys.
func TestLogsAutoDetectThroughCLI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture, expected string
		format            metrics.Format
		lrFrom            string // in the learning-rate finding: where the audit read it
	}{
		{"llamafactory-trainer_log.jsonl", "llamafactory-trainer_log.expected.json", metrics.FormatLlamaFactory, "rl: lr > 0 (max 9.938441702975689e-06)"},
		// SkyRL's console shows lr 1e-6 as '0.0000', which is not recorded:
		// the audit reads the parameter instead of a false 0.
		{"skyrl-console.log", "skyrl-console.expected.json", metrics.FormatSkyRLConsole, "rl: parameter lr=1e-06 (no learning-rate metric logged)"},
		{"openrlhf-console.log", "openrlhf-console.expected.json", metrics.FormatOpenRLHFConsole, "rl: actor_lr > 0 (max 1e-06)"},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			ldir := truthLedger(t)
			abs, err := filepath.Abs(logsFixtures + tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			// A neutral name: the content alone must decide.
			log := filepath.Join(t.TempDir(), "train.out")
			run := "train-" + string(tt.format)
			code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", "rl", "--run", run, "--gpu", "off",
				"--param", "lr=1e-6", "--metrics", log+":auto", "--", "cp", abs, log)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			say := "rlgate: metrics " + log + ": read as " + string(tt.format) + ", detected from its first lines"
			if !strings.Contains(errOut, say) {
				t.Errorf("stderr does not say which format it chose (%q):\n%s", say, errOut)
			}
			got := logsRunEntries(t, ldir, run)
			if d := cmp.Diff(map[string]metrics.Format{log: tt.format}, got.end.MetricFormats); d != "" {
				t.Errorf("run.end metric_formats (-want +got):\n%s", d)
			}
			if d := cmp.Diff(map[string]bool{string(tt.format): true}, got.formats); d != "" {
				t.Errorf("metrics entries' formats (-want +got):\n%s", d)
			}
			if want := logsExpected(t, tt.expected); got.points != want || len(got.end.MetricFindings) != 0 {
				t.Errorf("%d points, findings %q; want %d points, none", got.points, got.end.MetricFindings, want)
			}

			l, err := ledger.Open(context.Background(), ldir)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rep, err := audit.Training(context.Background(), l, audit.Subjects{Train: []audit.LabeledRun{{Label: audit.LabelRL, Run: run}}})
			if err != nil {
				t.Fatal(err)
			}
			passed := map[string]bool{}
			for _, f := range rep.Findings {
				passed[f.Check] = f.OK
				if f.Check == audit.CheckLearningRate && !strings.Contains(f.Message, tt.lrFrom) {
					t.Errorf("learning rate read from %q, want %q", f.Message, tt.lrFrom)
				}
			}
			want := map[string]bool{audit.CheckRunOK: true, audit.CheckMetricFindings: true, audit.CheckOptimizerSteps: true, audit.CheckLearningRate: true}
			if d := cmp.Diff(want, passed); d != "" {
				t.Errorf("training audit (-want +got):\n%s\n%+v", d, rep.Findings)
			}
		})
	}
}

// TestLogsAutoAmbiguousThroughCLI: a log that reads as two formats is not
// guessed: the warning names the file and the lines, run.end records it
// for the training audit, and nothing is ingested.
func TestLogsAutoAmbiguousThroughCLI(t *testing.T) {
	t.Parallel()
	ldir := truthLedger(t)
	log := filepath.Join(t.TempDir(), "train.out")
	script := `printf 'step:1 - a:1\nStep 2: \n{"a": 1}\n' > "$1"`
	code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", "rl", "--run", "amb", "--gpu", "off",
		"--metrics", log+":auto", "--", "sh", "-c", script, "sh", log)
	if code != exitOK {
		t.Fatalf("exit %d, want the stage's 0: %s", code, errOut)
	}
	want := "metrics " + log + ": detect metrics format of " + log + ": ambiguous metrics format: it reads as line 1 as verl-console and line 2 as skyrl-console; name the format, as in " + log + ":verl"
	if !strings.Contains(errOut, "rlgate: warning: "+want) {
		t.Errorf("stderr:\n%s\nwant the warning %q", errOut, want)
	}
	got := logsRunEntries(t, ldir, "amb")
	if d := cmp.Diff([]string{want}, got.end.MetricFindings); d != "" || got.points != 0 || got.end.MetricFormats != nil {
		t.Errorf("metric_findings (-want +got):\n%s\n%d points, formats %v", d, got.points, got.end.MetricFormats)
	}
}
