package train

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/grade"
)

// Job is one training run of rlgate train sft or grpo: the checkpoint it
// starts from, the import whose tasks (and gold) it trains on, and where
// it writes the checkpoint and its veRL-style metrics.
type Job struct {
	Init       string // checkpoint directory to start from
	Tasks      string // rlgate data import directory
	DBRoot     string // "": the import's
	Out        string // checkpoint directory to write
	MetricsOut string // "": no metrics file
}

// Trained is a checkpoint a training job wrote, with its model identity
// and what the trainer did; rlgate train prints it.
type Trained struct {
	Out           string       `json:"out"`
	ModelIdentity string       `json:"model_identity"`
	SFT           *SFTSummary  `json:"sft,omitempty"`
	GRPO          *GRPOSummary `json:"grpo,omitempty"`
}

// Init writes the Base checkpoint of seed (refpolicy.Base) to out.
func Init(ctx context.Context, out string, seed uint64) (*Trained, error) {
	return save(ctx, out, refpolicy.Base(seed), &Trained{})
}

// RunSFT trains j.Init by SFT on the trajectories in the file data and
// writes the result to j.Out.
func RunSFT(ctx context.Context, j Job, data string, o SFTOptions) (*Trained, error) {
	trs, err := ReadTrajectories(data)
	if err != nil {
		return nil, err
	}
	weights, ts, err := j.load()
	if err != nil {
		return nil, err
	}
	env := NewEnv(grade.MetricSpider)
	defer env.Close()
	var sum *SFTSummary
	err = j.withMetrics("sft", func(mf io.Writer) error {
		sum, err = SFT(ctx, env, weights, ts, trs, o, mf)
		return err
	})
	if err != nil {
		return nil, err
	}
	return save(ctx, j.Out, weights, &Trained{SFT: sum})
}

// GRPOJob is a GRPO run: its options, the checkpoint of its KL term, the
// metric whose verdict (or score) is its reward, and whether it trains
// only on the tasks j.Init has not mastered (Frontier: a curriculum's
// second stage).
type GRPOJob struct {
	Job
	Opts         GRPOOptions
	KLRef        string // "": no KL term
	Reward       grade.Metric
	UnsolvedOnly bool
}

// RunGRPO trains j.Init by GRPO and writes the result to j.Out.
func RunGRPO(ctx context.Context, j GRPOJob) (*Trained, error) {
	weights, ts, err := j.load()
	if err != nil {
		return nil, err
	}
	if j.KLRef != "" {
		if j.Opts.Ref, err = refpolicy.Load(j.KLRef); err != nil {
			return nil, err
		}
	}
	env := NewEnv(j.Reward)
	defer env.Close()
	if j.UnsolvedOnly {
		if ts, err = Frontier(ctx, env, weights, ts, j.Opts.Group, j.Opts.Seed); err != nil {
			return nil, err
		}
	}
	var sum *GRPOSummary
	err = j.withMetrics("grpo", func(mf io.Writer) error {
		sum, err = GRPO(ctx, env, weights, ts, j.Opts, mf)
		return err
	})
	if err != nil {
		return nil, err
	}
	return save(ctx, j.Out, weights, &Trained{GRPO: sum})
}

// load reads the start checkpoint and the tasks.
func (j Job) load() (*refpolicy.Weights, []Task, error) {
	weights, err := refpolicy.Load(j.Init)
	if err != nil {
		return nil, nil, err
	}
	ts, err := LoadTasks(j.Tasks, j.DBRoot)
	if err != nil {
		return nil, nil, err
	}
	return weights, ts, nil
}

// withMetrics runs train with the metrics file open (io.Discard without
// one) and closes it, so that a metrics file that cannot be written fails
// the job before its checkpoint is saved.
func (j Job) withMetrics(what string, train func(io.Writer) error) error {
	if j.MetricsOut == "" {
		return train(io.Discard)
	}
	f, err := os.Create(j.MetricsOut)
	if err != nil {
		return fmt.Errorf("train: metrics: %w", err)
	}
	defer f.Close()
	if err := train(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("train %s: metrics: %w", what, err)
	}
	return nil
}

// save writes weights to out and fills in t's model identity.
func save(ctx context.Context, out string, weights *refpolicy.Weights, t *Trained) (*Trained, error) {
	if err := weights.Save(out); err != nil {
		return nil, err
	}
	man, err := manifests.BuildCheckpointManifest(ctx, out)
	if err != nil {
		return nil, err
	}
	t.Out, t.ModelIdentity = out, man.Identity.String()
	return t, nil
}
