package evaluate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/synth"
)

// TestSynthResume: a synthesis whose endpoint fails some requests ends
// failed with the rollout's count and writes nothing; the same synthesis
// against a working endpoint plays only the unfinished episodes and
// completes.
func TestSynthResume(t *testing.T) {
	ldir := newLedger(t)
	var broken atomic.Bool
	broken.Store(true)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if broken.Load() && strings.HasSuffix(r.TaskID, "3") {
			return rollouttest.Reply{Status: 503}
		}
		return rollouttest.Reply{Content: "<think>so</think><solution>SELECT 1</solution>"}
	})
	out := filepath.Join(t.TempDir(), "sft")
	// As rlgate synth's defaults: temperature 1, seed 42.
	n, temp, seed := 1, 1.0, int64(42)
	o := SynthOptions{PlayOptions: play(ldir, spiderData(t), srv.URL+"/v1", "s1", 0), NumExamples: 40, Out: out}
	o.Model, o.MaxAttempts = "teacher", 1
	o.Sampling.N, o.Sampling.Temperature, o.Sampling.Seed = &n, &temp, &seed
	s, err := Synth(context.Background(), o)
	if !errors.Is(err, rollout.ErrIncomplete) || !strings.Contains(err.Error(), "unfinished") || s == nil || s.Rollout == nil || s.Rollout.Status != "failed" {
		t.Fatalf("synth with failing requests: %v, summary %+v", err, s)
	}
	if _, err := os.Stat(filepath.Join(out, synth.TrajectoriesFile)); err == nil {
		t.Error("a failed synthesis wrote trajectories")
	}
	broken.Store(false)
	before := srv.Requests.Load()
	s, err = Synth(context.Background(), o)
	if err != nil {
		t.Fatalf("resumed synth: %v", err)
	}
	r := s.Rollout
	if !r.Resumed || r.Ran == 0 || r.Skipped == 0 || r.Ran+r.Skipped != 40 || int64(r.Ran) != srv.Requests.Load()-before || s.Episodes != 40 || s.Status != "ok" {
		t.Errorf("resumed: %+v, rollout %+v", s, r)
	}
}
