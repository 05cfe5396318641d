package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// TestEvalModes evaluates with an endpoint that answers from the gold in
// a pattern over four kinds of task (samples 0, 1, 2):
//
//	kind 0: gold, gold, gold      greedy ok  majority ok (3 votes)   pass@1 1
//	kind 1: wrong, gold, gold     greedy no  majority ok (sample 1)  pass@1 2/3
//	kind 2: gold, wrongB, wrongB  greedy ok  majority no (sample 1)  pass@1 1/3
//	kind 3: wrongA, wrongB, gold  greedy no  majority no (tie: 0)    pass@1 1/3
//
// The rollout is played once; each later evaluation finds it complete.
func TestEvalModes(t *testing.T) {
	ldir, data := newLedger(t), spiderData(t)
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
	eval := func(mode string, k int, gradeRun string, w grade.Weights) *EvalSummary {
		t.Helper()
		s, err := Eval(context.Background(), EvalOptions{PlayOptions: withSamples(play(ldir, data, srv.URL, "ev", tasks), 3),
			Metric: grade.MetricSpider, Mode: mode, K: k, GradeRun: gradeRun, Weights: w})
		if err != nil {
			t.Fatalf("eval %s: %v", mode, err)
		}
		if s.Total != tasks || len(s.Items) != tasks || s.RolloutSummary == nil || s.RolloutSummary.Episodes != 3*tasks {
			t.Fatalf("eval %s: %d/%d, %d items", mode, s.Correct, s.Total, len(s.Items))
		}
		return s
	}

	greedy := eval(grade.ModeGreedy, 1, "", grade.Weights{})
	if greedy.Correct != tasks/2 || greedy.Run != "ev.spider-greedy" || greedy.RolloutSummary.Ran != 3*tasks {
		t.Errorf("greedy: %d/%d, run %s", greedy.Correct, greedy.Total, greedy.Run)
	}
	for _, it := range greedy.Items {
		if it.TaskID == "" || it.DBID == "" || it.Correct != (it.Index%4 == 0 || it.Index%4 == 2) {
			t.Errorf("greedy item %+v", it)
		}
	}

	majority := eval(grade.ModeMajority, 1, "", grade.Weights{})
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

	passk := eval(grade.ModePassK, 1, "", grade.Weights{})
	wantMean := 100 * (1 + 2.0/3 + 1.0/3 + 1.0/3) / 4
	if passk.Correct != tasks || passk.PassAtK == nil || math.Abs(*passk.PassAtK-wantMean) > 1e-9 || passk.Run != "ev.spider-passk1" {
		t.Errorf("pass@1: %d correct, mean %v, want %v", passk.Correct, passk.PassAtK, wantMean)
	}
	if pass3 := eval(grade.ModePassK, 3, "", grade.Weights{}); *pass3.PassAtK != 100 {
		t.Errorf("pass@3 = %v, want 100", *pass3.PassAtK)
	}

	// Reward components: a gold answer scores 1 on every component; the
	// total follows the weights given, and the weights are recorded.
	weights := grade.Weights{Execution: 0.5, SoftF1: 0.25, Format: 0.25}
	weighted := eval(grade.ModeGreedy, 1, "ev-rewards", weights)
	for _, it := range weighted.Items {
		r := it.ChosenReward
		if it.Index%4 == 0 && (r.Execution != 1 || r.SoftF1 != 1 || r.Format != 1 || r.Parses != 1 || r.SchemaJaccard != 1 || math.Abs(r.Total-1) > 1e-12) {
			t.Errorf("gold answer's reward %+v", r)
		}
		if it.Index%4 == 1 && (it.SampleReward[0] != 0.25 || it.SampleReward[1] != 1) {
			t.Errorf("kind 1 sample rewards %v, want [0.25 1 1]", it.SampleReward)
		}
	}
	var start grade.TrajectoryStart
	if err := json.Unmarshal([]byte(entryBody(t, ldir, weighted.StartSeq)), &start); err != nil || start.Weights != weights {
		t.Errorf("reward weights recorded in the grading run's start: %+v, want %+v (%v)", start.Weights, weights, err)
	}

	// A mode the samples cannot serve is refused before anything runs.
	for _, bad := range []struct {
		mode string
		k    int
	}{{"best", 1}, {grade.ModePassK, 4}} {
		_, err := Eval(context.Background(), EvalOptions{PlayOptions: withSamples(play(ldir, data, srv.URL, "ev", tasks), 3),
			Metric: grade.MetricSpider, Mode: bad.mode, K: bad.k})
		if !isUsage(err) {
			t.Errorf("mode %s, k %d: %v, want a usage error", bad.mode, bad.k, err)
		}
	}
	_, err = Eval(context.Background(), EvalOptions{PlayOptions: play(ldir, data, srv.URL, "one", 4), Metric: grade.MetricSpider, Mode: grade.ModeMajority, K: 1})
	if !isUsage(err) || !strings.Contains(err.Error(), "--n 2") {
		t.Errorf("majority of one sample: %v", err)
	}
}

// TestEvalIncomplete: eval does not grade a rollout with unfinished
// episodes unless told AllowIncomplete; then the grading counts them
// wrong, says so, and records that it did.
func TestEvalIncomplete(t *testing.T) {
	ldir, data := newLedger(t), spiderData(t)
	srv, _ := flaky(t)
	o := EvalOptions{PlayOptions: play(ldir, data, srv.URL, "ev", 6), Metric: grade.MetricSpider, Mode: grade.ModeGreedy, K: 1}
	o.MaxAttempts = 1
	s, err := Eval(context.Background(), o)
	if !errors.Is(err, rollout.ErrIncomplete) || !strings.Contains(err.Error(), "--allow-incomplete") || isUsage(err) {
		t.Errorf("eval of an incomplete rollout: %v", err)
	}
	if s == nil || s.TrajectorySummary != nil || s.RolloutSummary.Status != "failed" {
		t.Errorf("eval of an incomplete rollout: summary %+v, want the rollout's alone", s)
	}
	if _, _, err := runStatus(t, ldir, "ev.spider-greedy"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("an incomplete rollout was graded: %v", err)
	}

	o.AllowIncomplete = true
	s, err = Eval(context.Background(), o)
	if err != nil {
		t.Fatalf("AllowIncomplete: %v", err)
	}
	if !s.AllowIncomplete || !s.Incomplete || s.Unfinished != 4 || s.Total != 6 || s.Correct > 2 || s.RolloutSummary.Status != "failed" {
		t.Errorf("AllowIncomplete: %+v", s.TrajectorySummary)
	}
	for _, it := range s.Items {
		if taskIndex(t, it.TaskID)%3 != 0 && (it.Correct || it.Verdict != "pred-error" || it.StopReason != rollout.StopTransport) {
			t.Errorf("unfinished task graded %+v", it)
		}
	}
	var start grade.TrajectoryStart
	if err := json.Unmarshal([]byte(entryBody(t, ldir, s.StartSeq)), &start); err != nil || !start.AllowIncomplete || start.Unfinished != 4 {
		t.Errorf("the grading run's start does not record the incomplete rollout: %+v (%v)", start, err)
	}
}

// TestEvalChecksDatabases: rollout and eval check the databases as grade
// does, before anything is played; eval with AllowDBMismatch plays and
// grades, hashing the databases once, and the grading run records the
// mismatch.
func TestEvalChecksDatabases(t *testing.T) {
	dir := t.TempDir()
	ldir := newLedger(t)
	out, man := birdData(t, dir)
	root := corruptedCopy(t, dir)
	hero := dataset.DBPath(root, "superhero")
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		return rollouttest.Reply{Content: "<think>t</think><solution>SELECT 1</solution>"}
	})
	o := play(ldir, out, srv.URL, "ro", 3)
	o.DBRoot = root
	_, rerr := Rollout(context.Background(), o)
	o.Run = "ev"
	_, eerr := Eval(context.Background(), EvalOptions{PlayOptions: o, Metric: grade.MetricBird, Mode: grade.ModeGreedy, K: 1})
	for what, err := range map[string]error{"rollout": rerr, "eval": eerr} {
		if err == nil || isUsage(err) || !strings.Contains(lastLine(err.Error()), hero) || !strings.Contains(err.Error(), man.Databases["superhero"].String()) {
			t.Errorf("%s on a corrupted copy: %v", what, err)
		}
	}
	noRunStarted(t, ldir, "a refused rollout or eval")

	var progress lockedBuffer
	o.Progress = &progress
	s, err := Eval(context.Background(), EvalOptions{PlayOptions: o, Metric: grade.MetricBird, Mode: grade.ModeGreedy, K: 1, AllowDBMismatch: true})
	if err != nil {
		t.Fatalf("eval AllowDBMismatch: %v", err)
	}
	if strings.Count(progress.String(), "checking 3 databases") != 1 {
		t.Errorf("eval hashed the databases more than once, or said nothing: %q", progress.String())
	}
	var start grade.TrajectoryStart
	if err := json.Unmarshal([]byte(entryBody(t, ldir, s.StartSeq)), &start); err != nil {
		t.Fatal(err)
	}
	if c := start.Databases; c == nil || len(c.Mismatches) != 1 || c.Mismatches[0].DBID != "superhero" || c.SQLiteVersion == "" {
		t.Errorf("grading run.start database check %+v", c)
	}
}

// TestEvalRefusesEditedGold: eval grades only against the gold file the
// import wrote; one cut short is refused before the grading run starts.
func TestEvalRefusesEditedGold(t *testing.T) {
	dir := t.TempDir()
	ldir := newLedger(t)
	out, _ := birdData(t, dir)
	goldPath := filepath.Join(out, dataset.GoldFile)
	raw := readFile(t, goldPath)
	writeFile(t, goldPath, raw[:strings.LastIndex(strings.TrimSpace(string(raw)), "\n")+1])
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		return rollouttest.Reply{Content: "<think>t</think><solution>SELECT 1</solution>"}
	})
	_, err := Eval(context.Background(), EvalOptions{PlayOptions: play(ldir, out, srv.URL, "ev", 3), Metric: grade.MetricBird, Mode: grade.ModeGreedy, K: 1})
	if err == nil || isUsage(err) || !strings.Contains(lastLine(err.Error()), goldPath) || !strings.Contains(err.Error(), "139 entries") {
		t.Errorf("eval with a gold file a line short: %v", err)
	}
	if _, _, err := runStatus(t, ldir, "ev.bird-greedy"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a grading run was recorded: %v", err)
	}
}
