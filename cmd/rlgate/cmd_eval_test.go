package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/workflow/evaluate"
)

// TestEvalModes runs eval as a user would, with an endpoint that answers
// from the gold in a pattern over four kinds of task (samples 0, 1, 2):
//
//	kind 0: gold, gold, gold      greedy ok  majority ok (3 votes)   pass@1 1
//	kind 1: wrong, gold, gold     greedy no  majority ok (sample 1)  pass@1 2/3
//	kind 2: gold, wrongB, wrongB  greedy ok  majority no (sample 1)  pass@1 1/3
//	kind 3: wrongA, wrongB, gold  greedy no  majority no (tie: 0)    pass@1 1/3
func TestEvalModes(t *testing.T) {
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
	eval := func(extra ...string) evaluate.EvalSummary {
		t.Helper()
		args := append([]string{"--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "ev",
			"--limit", "40", "--n", "3", "--metric", "spider", "--json"}, extra...)
		code, out, errOut := rlgate(t, args...)
		if code != 0 {
			t.Fatalf("eval %v: exit %d: %s", extra, code, errOut)
		}
		var s evaluate.EvalSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.Total != tasks || len(s.Items) != tasks || s.RolloutSummary == nil || s.RolloutSummary.Episodes != 3*tasks {
			t.Fatalf("eval %v: %d/%d, %d items", extra, s.Correct, s.Total, len(s.Items))
		}
		return s
	}

	greedy := eval()
	if greedy.Correct != tasks/2 || greedy.Run != "ev.spider-greedy" || greedy.RolloutSummary.Ran != 3*tasks {
		t.Errorf("greedy: %d/%d, run %s", greedy.Correct, greedy.Total, greedy.Run)
	}
	for _, it := range greedy.Items {
		if it.TaskID == "" || it.DBID == "" || it.Correct != (it.Index%4 == 0 || it.Index%4 == 2) {
			t.Errorf("greedy item %+v", it)
		}
	}

	majority := eval("--mode", "majority")
	if majority.Correct != tasks/2 || majority.RolloutSummary.Status != "complete" {
		t.Errorf("majority: %d/%d, rollout %s", majority.Correct, majority.Total, majority.RolloutSummary.Status)
	}
	for _, it := range majority.Items {
		kind := it.Index % 4
		wantChosen, wantVotes := [4]int{0, 1, 1, 0}[kind], [4]int{3, 2, 2, 1}[kind]
		if it.Correct != (kind < 2) || it.ChosenSample != wantChosen || it.Votes != wantVotes {
			t.Errorf("majority kind %d: correct %v, chosen %d, votes %d", kind, it.Correct, it.ChosenSample, it.Votes)
		}
	}

	passk := eval("--mode", "passk", "--k", "1")
	wantMean := 100 * (1 + 2.0/3 + 1.0/3 + 1.0/3) / 4
	if passk.Correct != tasks || passk.PassAtK == nil || math.Abs(*passk.PassAtK-wantMean) > 1e-9 || passk.Run != "ev.spider-passk1" {
		t.Errorf("pass@1: %d correct, mean %v, want %v", passk.Correct, passk.PassAtK, wantMean)
	}
	if pass3 := eval("--mode", "passk", "--k", "3"); *pass3.PassAtK != 100 {
		t.Errorf("pass@3 = %v, want 100", *pass3.PassAtK)
	}

	// Reward components: a gold answer scores 1 on every component; the
	// total follows the weights given, and the weights are recorded.
	weighted := eval("--grade-run", "ev-rewards", "--reward-weight", "execution=0.5", "--reward-weight", "soft_f1=0.25", "--reward-weight", "format=0.25")
	for _, it := range weighted.Items {
		r := it.ChosenReward
		if it.Index%4 == 0 && (r.Execution != 1 || r.SoftF1 != 1 || r.Format != 1 || r.Parses != 1 || r.SchemaJaccard != 1 || math.Abs(r.Total-1) > 1e-12) {
			t.Errorf("gold answer's reward %+v", r)
		}
		if it.Index%4 == 1 && (it.SampleReward[0] != 0.25 || it.SampleReward[1] != 1) {
			t.Errorf("kind 1 sample rewards %v, want [0.25 1 1]", it.SampleReward)
		}
	}
	if code, out, _ := rlgate(t, "--ledger", ldir, "show", fmt.Sprint(weighted.StartSeq)); code != 0 || !strings.Contains(out, `"soft_f1": 0.25`) {
		t.Errorf("reward weights not recorded in the grading run's start:\n%s", out)
	}
	if code, _, _ := rlgate(t, "--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "ev",
		"--limit", "40", "--n", "3", "--metric", "spider", "--reward-weight", "style=1"); code != exitUsage {
		t.Errorf("unknown reward component: exit %d", code)
	}

	// Text output, as rlgate grade prints it.
	code, out, errOut := rlgate(t, "--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "ev",
		"--limit", "40", "--n", "3", "--metric", "bird", "--mode", "majority")
	if code != 0 || !strings.Contains(out, "execution accuracy 50.00% (20/40)") || !strings.Contains(out, "rollout ev is complete") {
		t.Errorf("text: exit %d: %s%s", code, out, errOut)
	}
	for _, bad := range [][]string{{"--mode", "best"}, {"--mode", "passk", "--k", "4"}, {"--metric", "exact"}} {
		args := append([]string{"--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "ev",
			"--limit", "40", "--n", "3", "--metric", "spider"}, bad...)
		if code, _, errOut := rlgate(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%q), want %d", bad, code, errOut, exitUsage)
		}
	}
	if code, _, errOut := rlgate(t, "--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "oracle", "--run", "one",
		"--limit", "4", "--metric", "spider", "--mode", "majority"); code != exitUsage || !strings.Contains(errOut, "--n 2") {
		t.Errorf("majority of one sample: exit %d: %q", code, errOut)
	}
}
