package train

import (
	"context"
	"testing"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
)

// TestEnvRewardBirdSoftF1: an env grading under bird-softf1 rewards an
// answer with BIRD's Soft-F1 of its rows (partial credit for half the
// gold rows), while Correct stays execution match and the execution
// env rewards the same answer 0.
func TestEnvRewardBirdSoftF1(t *testing.T) {
	ctx := context.Background()
	task := &Task{ID: "t", DBID: "superhero", DBPath: dataset.DBPath("../../../testdata/bird/dev_databases", "superhero"),
		Gold: "SELECT id FROM superhero WHERE id IN (1, 2) ORDER BY id"}
	// Rows (1), (3) against (1), (2): tp 1, fp 1, fn 1, so F1 = 0.5.
	const half = "SELECT id FROM superhero WHERE id IN (1, 3) ORDER BY id"
	for _, tt := range []struct {
		metric grade.Metric
		q      string
		reward float64
		right  bool
	}{
		{grade.MetricBirdSoftF1, half, 0.5, false},
		{grade.MetricBirdSoftF1, task.Gold, 1, true},
		{grade.MetricSpider, half, 0, false},
	} {
		env := NewEnv(tt.metric)
		r, err := env.Reward(ctx, task, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		right, err := env.Correct(ctx, task, tt.q)
		env.Close()
		if err != nil || r != tt.reward || right != tt.right {
			t.Errorf("%s %q: reward %v, correct %v (%v); want %v, %v", tt.metric, tt.q, r, right, err, tt.reward, tt.right)
		}
	}
}
