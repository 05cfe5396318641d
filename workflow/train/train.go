// Package train is rlgate train: the reference policy's trainer
// (lab/refpolicy/train) run on a request as the command line gives it,
// checked first, and the text of the checkpoint it wrote.
package train

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/workflow/usage"
)

// rewardMetrics maps train grpo's --reward to the metric its env grades
// under: the reward is that metric's verdict, or its score.
var rewardMetrics = map[string]grade.Metric{"": grade.MetricSpider, "execution": grade.MetricSpider, "bird-softf1": grade.MetricBirdSoftF1}

// SFT is rlgate train sft: train.RunSFT on a checked request.
func SFT(ctx context.Context, j train.Job, data string, o train.SFTOptions) (*train.Trained, error) {
	if o.Epochs < 1 || o.Batch < 1 || o.LR < 0 {
		return nil, usage.Errorf("train sft needs --epochs and --batch of at least 1 and --lr >= 0")
	}
	if err := checkOut(j, ""); err != nil {
		return nil, err
	}
	return train.RunSFT(ctx, j, data, o)
}

// GRPO is rlgate train grpo: train.RunGRPO on a checked request, rewarded
// under reward (execution or bird-softf1).
func GRPO(ctx context.Context, j train.GRPOJob, reward string) (*train.Trained, error) {
	o := j.Opts
	if o.Steps < 1 || o.Batch < 1 || o.Group < 2 || o.LR < 0 || o.PPOEpochs < 1 {
		return nil, usage.Errorf("train grpo needs --steps, --batch and --ppo-epochs of at least 1, --group-size of at least 2 and --lr >= 0")
	}
	var ok bool
	if j.Reward, ok = rewardMetrics[reward]; !ok {
		return nil, usage.Errorf("--reward %q: want execution or bird-softf1", reward)
	}
	if err := checkOut(j.Job, j.KLRef); err != nil {
		return nil, err
	}
	return train.RunGRPO(ctx, j)
}

// checkOut refuses an --out that is the --init checkpoint (or klRef):
// training would overwrite its own input.
func checkOut(j train.Job, klRef string) error {
	for _, in := range []string{j.Init, klRef} {
		if in != "" && filepath.Clean(in) == filepath.Clean(j.Out) {
			return usage.Errorf("train: --out %s is an input checkpoint; write to another directory", j.Out)
		}
	}
	return nil
}

// WriteText says what a training job wrote: its SFT or GRPO summary, the
// checkpoint and its model identity.
func WriteText(w io.Writer, t *train.Trained) error {
	if s := t.SFT; s != nil {
		fmt.Fprintf(w, "sft: %d of %d trajectories matched, %d steps, loss %.4f -> %.4f\n", s.Examples, s.Trajectories, s.Steps, s.LossFirst, s.LossLast)
	}
	if s := t.GRPO; s != nil {
		fmt.Fprintf(w, "grpo: %d steps, %d episodes, %d of %d groups dropped for zero variance, reward %.3f -> %.3f\n",
			s.Steps, s.Episodes, s.ZeroAdvGroups, s.Groups, s.MeanRewardHead, s.MeanRewardTail)
	}
	_, err := fmt.Fprintf(w, "wrote %s\nmodel identity: %s\n", t.Out, t.ModelIdentity)
	return err
}
