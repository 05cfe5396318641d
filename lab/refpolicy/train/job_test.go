package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
)

// TestJobs: Init writes the same checkpoint for the same seed; a GRPO job
// at learning rate 0 (the No-update control) writes weights of the start
// checkpoint's identity and its metrics; a metrics file that cannot be
// written fails the job before any checkpoint is written.
func TestJobs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := Init(ctx, filepath.Join(dir, "a"), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Init(ctx, filepath.Join(dir, "b"), 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Init(ctx, filepath.Join(dir, "c"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if a.ModelIdentity != b.ModelIdentity || a.ModelIdentity == c.ModelIdentity || a.Out != filepath.Join(dir, "a") {
		t.Errorf("init: seed 1 %s and %s, seed 2 %s; want the same for the same seed only", a.ModelIdentity, b.ModelIdentity, c.ModelIdentity)
	}

	src := "../../../testdata/spider"
	im, err := dataset.ImportSpider(ctx, dataset.SpiderOptions{Dev: src + "/dev.json", Gold: src + "/dev_gold.sql", DBRoot: src + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "spider")
	if err := im.WriteDir(tasks, false); err != nil {
		t.Fatal(err)
	}
	j := GRPOJob{Job: Job{Init: a.Out, Tasks: tasks, Out: filepath.Join(dir, "noupdate"), MetricsOut: filepath.Join(dir, "noupdate.jsonl")},
		Opts: GRPOOptions{Steps: 1, Batch: 2, Group: 2, PPOEpochs: 1, Seed: 1}, Reward: grade.MetricSpider}
	got, err := RunGRPO(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if got.ModelIdentity != a.ModelIdentity || got.GRPO == nil || got.GRPO.Steps != 1 {
		t.Errorf("no-update GRPO: identity %s (start %s), summary %+v", got.ModelIdentity, a.ModelIdentity, got.GRPO)
	}
	if m, err := os.ReadFile(j.MetricsOut); err != nil || !strings.Contains(string(m), `"step"`) {
		t.Errorf("metrics file: %v, %q", err, m)
	}

	j.Out, j.MetricsOut = filepath.Join(dir, "never"), filepath.Join(dir, "no-such-dir", "m.jsonl")
	if _, err := RunGRPO(ctx, j); err == nil || !strings.Contains(err.Error(), "train: metrics:") {
		t.Errorf("unwritable metrics: %v", err)
	}
	if _, err := os.Stat(j.Out); !os.IsNotExist(err) {
		t.Errorf("a failed job wrote its checkpoint: %v", err)
	}
}
