package train

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
	"golang.org/x/sync/singleflight"
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

// The samples of a GRPO group ask for the same probe at the same time:
// remember computes a value once however the callers interleave, and
// forgets an error, so the next caller tries again.
func TestRememberComputesOnce(t *testing.T) {
	var mu sync.Mutex
	m := map[[2]string]string{}
	var g singleflight.Group
	var calls atomic.Int32
	release := make(chan struct{})
	key := [2]string{"db.sqlite", "SELECT 1"}
	compute := func() (string, error) {
		calls.Add(1)
		<-release
		return "observation", nil
	}
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = remember(&mu, m, &g, key, compute)
		}()
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("16 callers computed the value %d times, want once", n)
	}
	for i, v := range got {
		if v != "observation" {
			t.Errorf("caller %d got %q", i, v)
		}
	}

	fail := [2]string{"db.sqlite", "SELECT broken"}
	if _, err := remember(&mu, m, &g, fail, func() (string, error) { return "", errors.New("broken") }); err == nil {
		t.Fatal("the error was not returned")
	}
	if v, err := remember(&mu, m, &g, fail, func() (string, error) { return "fixed", nil }); err != nil || v != "fixed" {
		t.Errorf("after an error: %q, %v; want the value computed again", v, err)
	}
}
