package audit

import (
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"slices"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
)

// The rollout and runner enforce what these audits check, so the real
// commands cannot write the faults below; these tests append the entries
// those commands write, with the fault in them.

// auditRollout records a finished rollout of n tasks whose episode i spent
// turns(i) turns, and a grading run of it; it returns the trajectories
// entry.
func auditRollout(t *testing.T, l *ledger.Ledger, run string, n int, turns func(i int) int) int64 {
	t.Helper()
	p := rollout.DefaultProtocol()
	pd, err := p.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ar, err := l.StartRun(ctx, run, rollout.Start{RunStart: ledger.RunStart{Stage: rollout.Stage}, Protocol: p, ProtocolDigest: pd, Model: "m", Count: n})
	if err != nil {
		t.Fatal(err)
	}
	var body rollout.Trajectories
	var o ledger.Outcomes
	for i := range n {
		id := fmt.Sprintf("task-%02d", i)
		body.Episodes = append(body.Episodes, rollout.EpisodeRef{TaskID: id, StopReason: rollout.StopSolution, Turns: turns(i), SQLExecutions: 1})
		o.Items = append(o.Items, ledger.Outcome{TaskID: id, Correct: true})
	}
	es, err := l.Append(ctx, ledger.Record{Kind: records.KindTrajectories, Run: run, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ar.End(ctx, ledger.RunEnd{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	gr, err := l.StartRun(ctx, run+".strict-greedy", grading.TrajectoryStart{RunStart: ledger.RunStart{Stage: "grade"}, Rollout: run, ProtocolDigest: pd, Metric: grading.MetricStrict, Mode: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: run + ".strict-greedy", Body: o}); err != nil {
		t.Fatal(err)
	}
	if _, err := gr.End(ctx, ledger.RunEnd{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	return es[0].Seq
}

func TestBudgetFlagsEpisodesOverBudget(t *testing.T) {
	l := ledgertest.New(t)
	auditRollout(t, l, "ev-base", 10, func(int) int { return 3 })
	over := auditRollout(t, l, "ev-rl", 10, func(i int) int { return map[bool]int{true: 9, false: 3}[i == 4] })
	r, err := Budget(ctx, l, Subjects{Runs: []LabeledRun{{"base", "ev-base.strict-greedy"}, {"rl", "ev-rl.strict-greedy"}}})
	if err != nil {
		t.Fatal(err)
	}
	var failed []Finding
	for _, f := range r.Findings {
		if !f.OK {
			failed = append(failed, f)
		}
	}
	if len(failed) != 1 || failed[0].Check != CheckWithinBudget || !slices.Equal(failed[0].Seqs, []int64{over}) {
		t.Fatalf("failed findings %+v, want within-budget citing entry %d", failed, over)
	}
	ev := failed[0].Evidence.([]OverBudget)
	if len(ev) != 1 || ev[0].TaskID != "task-04" || ev[0].Detail != "9 turns of 6" {
		t.Errorf("evidence %+v", ev)
	}
}

// auditTrain records a stage run with params and veRL-keyed metrics.
func auditTrain(t *testing.T, l *ledger.Ledger, run string, params map[string]string, pts []ledger.MetricPoint) (start, metrics int64) {
	t.Helper()
	ar, err := l.StartRun(ctx, run, runner.StartBody{RunStart: ledger.RunStart{Stage: "rl"}, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) > 0 {
		es, err := l.Append(ctx, ledger.Record{Kind: records.KindMetrics, Run: run, Body: ledger.Metrics{Points: pts, Format: "verl"}})
		if err != nil {
			t.Fatal(err)
		}
		metrics = es[0].Seq
	}
	if _, err := ar.End(ctx, ledger.RunEnd{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	return ar.Seq, metrics
}

func TestTrainingReadsLearningRateFromParamsWithoutMetric(t *testing.T) {
	l := ledgertest.New(t)
	steps := []ledger.MetricPoint{{Step: 1, Key: "training/global_step", Value: 1}}
	rlStart, _ := auditTrain(t, l, "rl", map[string]string{"actor.optim.lr": "0"}, steps)
	auditTrain(t, l, "lr0", map[string]string{"lr": "0"}, steps)
	r, err := Training(ctx, l, Subjects{Train: []LabeledRun{{LabelRL, "rl"}, {LabelNoUpdate, "lr0"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		if f.Check == CheckLearningRate {
			got = append(got, fmt.Sprintf("%v %v", f.OK, f.Seqs))
		}
	}
	want := []string{fmt.Sprintf("false [%d]", rlStart), fmt.Sprintf("true [%d]", rlStart+3)}
	if !slices.Equal(got, want) {
		t.Errorf("learning-rate findings %q, want %q", got, want)
	}
}

func TestRewardBoundsKLGrowth(t *testing.T) {
	l := ledgertest.New(t)
	var pts []ledger.MetricPoint
	for s := int64(1); s <= 20; s++ {
		// KL from 0.001 to 0.4: the last tenth's mean, 0.3805, over the
		// first tenth's, 0.0025, is 152.2, far over the default 10.
		kl := 0.001 * float64(s*s)
		pts = append(pts, ledger.MetricPoint{Step: s, Key: "actor/kl_loss", Value: kl}, ledger.MetricPoint{Step: s, Key: "critic/score/mean", Value: 0.5})
	}
	_, seq := auditTrain(t, l, "rl", nil, pts)
	r, err := Reward(ctx, l, Subjects{Train: []LabeledRun{{LabelRL, "rl"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	byCheck := map[string]Finding{}
	for _, f := range r.Findings {
		byCheck[f.Check] = f
	}
	if f := byCheck[CheckKLGrowth]; f.OK || !slices.Contains(f.Seqs, seq) {
		t.Errorf("kl-growth: %+v", f)
	}
	if f := byCheck[CheckRewardAlive]; !f.OK {
		t.Errorf("execution-reward: %+v", f)
	}
	// 152.2 is under a bound of 200.
	r, err = Reward(ctx, l, Subjects{Train: []LabeledRun{{LabelRL, "rl"}}}, Options{MaxKLGrowth: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		if f.Check == CheckKLGrowth && !f.OK {
			t.Errorf("kl-growth under a bound of 200: %s", f.Message)
		}
	}
}
