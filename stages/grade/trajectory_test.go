package grade

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
)

// rolloutSpider records a rollout of the first n Spider tasks with samples
// samples each; answer picks each episode's solution from its task's gold.
func rolloutSpider(t *testing.T, l *ledger.Ledger, dir, run string, n, samples int, answer func(g gold.Gold, sample int) string) {
	t.Helper()
	ts, err := tasks.Read(filepath.Join(dir, dataset.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	golds, err := gold.Read(filepath.Join(dir, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gold.Gold{}
	for _, g := range golds {
		byID[g.ID] = g
	}
	man, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		return rollouttest.Reply{Content: "<think>answer</think><solution>" + answer(byID[r.TaskID], r.Sample) + "</solution>"}
	})
	p := rollout.DefaultProtocol()
	p.Sampling.N = samples
	_, err = rollout.Play(context.Background(), l, rollout.Options{Run: run, Tasks: ts[:n], TasksPath: filepath.Join(dir, dataset.TasksFile), TasksDigest: man.Tasks.Digest,
		DBPath: func(id string) string { return dataset.DBPath(man.DBRoot, id) }, Endpoint: srv.URL, Model: "oracle", Protocol: p})
	if err != nil {
		t.Fatal(err)
	}
}

// gradedRollout records rollout "r" of the first n Spider tasks, samples
// each, whose even tasks answer their gold and odd ones wrong, and grades
// it greedily with the Spider metric; the grader stays open until the test
// ends.
func gradedRollout(t *testing.T, n, samples int, wrong string) (*ledger.Ledger, string, *Grader, *TrajectorySummary) {
	t.Helper()
	dir := importSpider(t)
	l := ledgertest.New(t)
	rolloutSpider(t, l, dir, "r", n, samples, func(g gold.Gold, sample int) string {
		if g.Index%2 == 0 {
			return g.SQL
		}
		return wrong
	})
	g := NewGrader(Options{}, nil)
	t.Cleanup(func() { g.Close() })
	s, err := GradeTrajectories(context.Background(), l, g, TrajectoryOptions{Rollout: "r", Dataset: dir, Metric: MetricSpider, Mode: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	return l, dir, g, s
}

func TestGradeTrajectories(t *testing.T) {
	ctx := context.Background()
	// Even tasks answered with their gold, odd ones with a wrong query.
	l, dir, g, s := gradedRollout(t, 20, 2, "SELECT 'wrong'")
	if s.Run != "r.spider-greedy" || s.Total != 20 || s.Correct != 10 || len(s.Items) != 20 || s.GoldDefects != 0 {
		t.Fatalf("summary %d/%d run %s", s.Correct, s.Total, s.Run)
	}
	for _, it := range s.Items {
		if it.Correct != (it.Index%2 == 0) || it.Samples != 2 || len(it.SampleCorrect) != 2 || it.StopReason != rollout.StopSolution || it.DBID == "" {
			t.Errorf("item %+v", it)
		}
	}
	rows, err := l.Outcomes(ctx, s.Run)
	if err != nil || len(rows) != 20 {
		t.Fatalf("outcomes: %v, %d rows", err, len(rows))
	}
	// The grading run opened after the rollout was frozen.
	r, _ := l.RunStatus(ctx, "r")
	if s.StartSeq <= *r.EndedSeq {
		t.Errorf("grading started at %d, before the rollout ended at %d", s.StartSeq, *r.EndedSeq)
	}
	e, _ := l.EntryBySeq(ctx, s.StartSeq)
	var start TrajectoryStart
	if err := json.Unmarshal(e.Body, &start); err != nil || start.RolloutEnd != *r.EndedSeq || start.GoldDigest.IsZero() {
		t.Errorf("start body %s: %v", e.Body, err)
	}

	// A second grading under the same name is refused; another metric is fine.
	if _, err := GradeTrajectories(ctx, l, g, TrajectoryOptions{Rollout: "r", Dataset: dir, Metric: MetricSpider, Mode: "greedy"}); err == nil {
		t.Error("graded twice under one run id")
	}
	if _, err := GradeTrajectories(ctx, l, g, TrajectoryOptions{Rollout: "r", Dataset: dir, Metric: MetricStrict, Mode: "greedy"}); err != nil {
		t.Error(err)
	}
}

func TestGradeTrajectoriesRefuses(t *testing.T) {
	ctx := context.Background()
	dir := importSpider(t)
	l := ledgertest.New(t)
	g := NewGrader(Options{}, nil)
	defer g.Close()
	// A rollout still open (here: never ended) is not graded.
	active, err := l.StartRun(ctx, "open", rollout.Start{RunStart: ledger.RunStart{Stage: rollout.Stage}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GradeTrajectories(ctx, l, g, TrajectoryOptions{Rollout: "open", Dataset: dir, Metric: MetricBird, Mode: "greedy"}); err == nil || !strings.Contains(err.Error(), "only a finished rollout") {
		t.Errorf("open rollout: %v", err)
	}
	active.End(ctx, ledger.RunEnd{Status: "ok"})
	// A rollout of other tasks is not graded against this gold.
	if _, err := GradeTrajectories(ctx, l, g, TrajectoryOptions{Rollout: "open", Dataset: dir, Metric: MetricBird, Mode: "greedy"}); err == nil || !strings.Contains(err.Error(), "holds tasks") {
		t.Errorf("other tasks: %v", err)
	}
}

func TestResultKey(t *testing.T) {
	a := Denotation{Rows: [][]sqlenv.Cell{{sqlenv.Int(1), sqlenv.Text("x")}, {sqlenv.Int(2), sqlenv.Text("y")}}}
	b := Denotation{Rows: [][]sqlenv.Cell{{sqlenv.Real(2), sqlenv.Text("y")}, {sqlenv.Int(1), sqlenv.Text("x")}, {sqlenv.Int(1), sqlenv.Text("x")}}}
	c := Denotation{Rows: [][]sqlenv.Cell{{sqlenv.Int(1), sqlenv.Text("x")}}}
	if ResultKey(a) != ResultKey(b) {
		t.Error("order, duplicates or 2 == 2.0 change the key")
	}
	if ResultKey(a) == ResultKey(c) || ResultKey(Denotation{}) == (ledger.Digest{}) {
		t.Error("different result sets share a key")
	}
	if !ResultKey(Denotation{Err: ErrNoPrediction}).IsZero() {
		t.Error("a failed prediction has a key")
	}
}
