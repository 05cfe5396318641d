package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/workflow/evaluate"
)

// TestEvalCommand runs eval as a user would, with an endpoint that
// answers from the gold in a pattern over four kinds of task (samples 0,
// 1, 2: gold, gold, gold; wrong, gold, gold; gold, wrongB, wrongB;
// wrongA, wrongB, gold), and checks what is the command's: the --json
// summary, the text summary, the flags that reach the workflow
// (--reward-weight recorded) and the usage errors. What each mode counts
// is workflow/evaluate's TestEvalModes.
func TestEvalCommand(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	golds, err := gold.Read(filepath.Join(data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gold.Gold{}
	for _, g := range golds {
		byID[g.ID] = g
	}
	answers := [4][3]string{{"", "", ""}, {"SELECT 'a'", "", ""}, {"", "SELECT 'b'", "SELECT 'b'"}, {"SELECT 'a'", "SELECT 'b'", ""}}
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		g := byID[r.TaskID]
		sql := answers[g.Index%4][r.Sample]
		if sql == "" {
			sql = g.SQL
		}
		return rollouttest.Reply{Content: "<think>t</think><solution>" + sql + "</solution>"}
	})
	const tasks = 40
	base := []string{"--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "ev", "--limit", "40", "--n", "3"}

	// --json: grade's summary with the rollout's beside it.
	code, out, errOut := rlgate(t, append(base, "--metric", "spider", "--json", "--grade-run", "ev-rewards",
		"--reward-weight", "execution=0.5", "--reward-weight", "soft_f1=0.25", "--reward-weight", "format=0.25")...)
	var s evaluate.EvalSummary
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("eval --json: exit %d: %s%s", code, out, errOut)
	}
	if s.Total != tasks || len(s.Items) != tasks || s.Correct != tasks/2 || s.Run != "ev-rewards" || s.RolloutSummary == nil || s.RolloutSummary.Episodes != 3*tasks {
		t.Fatalf("eval --json: %d/%d, %d items, run %s", s.Correct, s.Total, len(s.Items), s.Run)
	}
	if code, out, _ := rlgate(t, "--ledger", ldir, "show", fmt.Sprint(s.StartSeq)); code != 0 || !strings.Contains(out, `"soft_f1": 0.25`) {
		t.Errorf("reward weights not recorded in the grading run's start:\n%s", out)
	}
	if code, _, _ := rlgate(t, append(base, "--metric", "spider", "--reward-weight", "style=1")...); code != exitUsage {
		t.Errorf("unknown reward component: exit %d", code)
	}

	// Text output, as rlgate grade prints it.
	code, out, errOut = rlgate(t, append(base, "--metric", "bird", "--mode", "majority")...)
	if code != 0 || !strings.Contains(out, "execution accuracy 50.00% (20/40)") || !strings.Contains(out, "rollout ev is complete") {
		t.Errorf("text: exit %d: %s%s", code, out, errOut)
	}
	for _, bad := range [][]string{{"--mode", "best"}, {"--mode", "passk", "--k", "4"}, {"--metric", "exact"}} {
		args := append(append(base, "--metric", "spider"), bad...)
		if code, _, errOut := rlgate(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%q), want %d", bad, code, errOut, exitUsage)
		}
	}
	if code, _, errOut := rlgate(t, "--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "one",
		"--limit", "4", "--metric", "spider", "--mode", "majority"); code != exitUsage || !strings.Contains(errOut, "--n 2") || !strings.Contains(errOut, "(see rlgate help)") {
		t.Errorf("majority of one sample: exit %d: %q", code, errOut)
	}
}
