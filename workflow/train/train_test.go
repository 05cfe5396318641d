package train

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/workflow/usage"
)

// TestRefusesBeforeTraining: a request that cannot run as written is a
// usage.Error before any input is read (none of these paths exists).
func TestRefusesBeforeTraining(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	job := train.Job{Init: ck, Tasks: filepath.Join(dir, "tasks"), Out: filepath.Join(dir, "out")}
	grpo := train.GRPOOptions{Steps: 1, Batch: 1, Group: 2, PPOEpochs: 1}
	tests := []struct {
		name string
		run  func() error
	}{
		{"sft epochs", func() error { _, err := SFT(t.Context(), job, "", train.SFTOptions{Batch: 1}); return err }},
		{"sft out is init", func() error {
			_, err := SFT(t.Context(), train.Job{Init: ck, Out: ck + "/"}, "", train.SFTOptions{Epochs: 1, Batch: 1})
			return err
		}},
		{"grpo group", func() error {
			_, err := GRPO(t.Context(), train.GRPOJob{Job: job, Opts: train.GRPOOptions{Steps: 1, Batch: 1, Group: 1, PPOEpochs: 1}}, "execution")
			return err
		}},
		{"grpo reward", func() error { _, err := GRPO(t.Context(), train.GRPOJob{Job: job, Opts: grpo}, "bleu"); return err }},
		{"grpo out is kl-ref", func() error {
			_, err := GRPO(t.Context(), train.GRPOJob{Job: job, Opts: grpo, KLRef: job.Out}, "execution")
			return err
		}},
	}
	for _, tt := range tests {
		if err := tt.run(); !errors.As(err, new(usage.Error)) {
			t.Errorf("%s: %v, want a usage.Error", tt.name, err)
		}
	}
}
