package grade

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout"
)

func TestReadTaskGrading(t *testing.T) {
	ctx := context.Background()
	l, dir, _, s := gradedRollout(t, 6, 1, "SELECT '<script>x</script>'")
	golds, err := gold.Read(filepath.Join(dir, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range s.Items {
		tg, err := ReadTaskGrading(ctx, l, s.Run, it.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Rollout != "r" || tg.Metric != MetricSpider || tg.Mode != "greedy" || tg.Seq == 0 || tg.GoldError != "" ||
			tg.Item.Correct != it.Correct || tg.Item.Verdict != it.Verdict || tg.Item.StopReason != rollout.StopSolution || *tg.Gold != golds[i] {
			t.Errorf("task %s: %+v, graded %+v", it.TaskID, tg, it)
		}
	}
	if _, err := ReadTaskGrading(ctx, l, s.Run, "no-such-task"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := ReadTaskGrading(ctx, l, "r", s.Items[0].TaskID); !errors.Is(err, ErrNotTrajectoryGrading) {
		t.Errorf("a rollout run: %v", err)
	}
	// A gold file that changed since the grading is not shown; the
	// grading still is.
	if err := os.WriteFile(filepath.Join(dir, dataset.GoldFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := ReadTaskGrading(ctx, l, s.Run, s.Items[0].TaskID)
	if err != nil || tg.Gold != nil || tg.GoldError == "" || !tg.Item.Correct {
		t.Errorf("changed gold: %v, %+v", err, tg)
	}
}
