package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/urfave/cli/v3"
)

func newTrainCommand() *cli.Command {
	return &cli.Command{
		Name:  "train",
		Usage: "train the reference policy on the CPU: init, sft, grpo",
		Description: "The reference policy's trainer (docs/REFPOLICY.md). Every subcommand writes a\n" +
			"checkpoint directory (model.safetensors: one f32 tensor slot.<name>.w per slot)\n" +
			"and prints its model identity; sft and grpo write veRL-style JSONL metrics\n" +
			"(--metrics-out, {\"step\": N, \"data\": {...}}) for rlgate run --metrics FILE:verl.\n" +
			"The same inputs and --seed give the same bytes.\n\n" + exitCodesHelp,
		Commands: []*cli.Command{newTrainInitCommand(), newTrainSFTCommand(), newTrainGRPOCommand()},
	}
}

func newTrainInitCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "write the Base checkpoint: name-match priors, weak but not zero",
		Description: "Writes --out/model.safetensors with the Base weights: priors on exact and\n" +
			"partial matches of table, column and probed value names and on leaving\n" +
			"clauses out, plus seeded noise of standard deviation 0.01 that breaks ties.\n" +
			"Greedily it answers \"what are the names of all singers\"-like questions;\n" +
			"every trigger word (how many, oldest, each, more than) is left to training.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "out", Required: true, Usage: "checkpoint `DIR` to write"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "`SEED` of the tie-breaking noise"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runTrainInit(ctx, trainInitOptions{JSON: cmd.Bool("json"), Out: cmd.String("out"), Seed: cmd.Uint64("seed")}, cmd.Root().Writer)
			return err
		},
	}
}

type trainInitOptions struct {
	JSON bool
	Out  string
	Seed uint64
}

// trainSummary is what every train subcommand prints.
type trainSummary struct {
	Out           string             `json:"out"`
	ModelIdentity string             `json:"model_identity"`
	SFT           *train.SFTSummary  `json:"sft,omitempty"`
	GRPO          *train.GRPOSummary `json:"grpo,omitempty"`
}

func runTrainInit(ctx context.Context, o trainInitOptions, w io.Writer) (*trainSummary, error) {
	return saveTrained(ctx, o.JSON, o.Out, refpolicy.Base(o.Seed), &trainSummary{}, w)
}

// saveTrained writes the checkpoint, hashes it and prints the summary.
func saveTrained(ctx context.Context, asJSON bool, out string, weights *refpolicy.Weights, s *trainSummary, w io.Writer) (*trainSummary, error) {
	if err := weights.Save(out); err != nil {
		return nil, err
	}
	man, err := manifests.BuildCheckpointManifest(ctx, out)
	if err != nil {
		return nil, err
	}
	s.Out, s.ModelIdentity = out, man.Identity.String()
	return s, emit(w, asJSON, s, func(w io.Writer) error {
		if s.SFT != nil {
			fmt.Fprintf(w, "sft: %d of %d trajectories matched, %d steps, loss %.4f -> %.4f\n", s.SFT.Examples, s.SFT.Trajectories, s.SFT.Steps, s.SFT.LossFirst, s.SFT.LossLast)
		}
		if s.GRPO != nil {
			fmt.Fprintf(w, "grpo: %d steps, %d episodes, %d of %d groups dropped for zero variance, reward %.3f -> %.3f\n",
				s.GRPO.Steps, s.GRPO.Episodes, s.GRPO.ZeroAdvGroups, s.GRPO.Groups, s.GRPO.MeanRewardHead, s.GRPO.MeanRewardTail)
		}
		_, err := fmt.Fprintf(w, "wrote %s\nmodel identity: %s\n", out, s.ModelIdentity)
		return err
	})
}

// trainCommonFlags are the flags sft and grpo share.
func trainCommonFlags() []cli.Flag {
	return []cli.Flag{jsonFlag,
		&cli.StringFlag{Name: "init", Required: true, Usage: "checkpoint `DIR` to start from"},
		&cli.StringFlag{Name: "tasks", Required: true, Usage: "rlgate data import `DIR` (tasks.jsonl, gold.jsonl, manifest.json)"},
		&cli.StringFlag{Name: "db-root", Usage: "database root `DIR` (default: the import's)"},
		&cli.StringFlag{Name: "out", Required: true, Usage: "checkpoint `DIR` to write"},
		&cli.StringFlag{Name: "metrics-out", Usage: "veRL-style JSONL metrics `FILE` to write"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "`SEED` of data order and sampling"},
		&cli.FloatFlag{Name: "weight-decay", Value: 0.01, Usage: "AdamW weight decay"},
	}
}

func newTrainSFTCommand() *cli.Command {
	return &cli.Command{
		Name:  "sft",
		Usage: "supervised fine-tuning on rejection-sampled trajectories (rlgate synth)",
		Description: "Each trajectory (trajectories.jsonl, stages/synth records) is matched to its task\n" +
			"in --tasks; its target is every choice of the policy whose SQL equals the\n" +
			"trajectory's final SQL (white space folded); a final SQL the policy cannot\n" +
			"express is counted and skipped. AdamW, cosine learning rate, minibatches.\n\n" + exitCodesHelp,
		Flags: append(trainCommonFlags(),
			&cli.StringFlag{Name: "data", Required: true, Usage: "trajectories.jsonl `FILE`"},
			&cli.IntFlag{Name: "epochs", Value: 3, Usage: "passes over the data"},
			&cli.IntFlag{Name: "batch", Value: 16, Usage: "examples per step"},
			&cli.FloatFlag{Name: "lr", Value: 0.05, Usage: "peak learning rate"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runTrainSFT(ctx, trainSFTOptions{trainCommon: trainCommonOf(cmd), Data: cmd.String("data"),
				Opts: train.SFTOptions{Epochs: int(cmd.Int("epochs")), Batch: int(cmd.Int("batch")), LR: cmd.Float("lr"), Decay: cmd.Float("weight-decay"), Seed: cmd.Uint64("seed")}}, cmd.Root().Writer)
			return err
		},
	}
}

type trainCommon struct {
	JSON       bool
	Init       string
	Tasks      string
	DBRoot     string
	Out        string
	MetricsOut string
}

func trainCommonOf(cmd *cli.Command) trainCommon {
	return trainCommon{JSON: cmd.Bool("json"), Init: cmd.String("init"), Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"),
		Out: cmd.String("out"), MetricsOut: cmd.String("metrics-out")}
}

// open loads the start checkpoint and the tasks and opens the metrics file.
// An --out that is the --init checkpoint (or another given here, like
// --kl-ref) is refused: training would overwrite its own input.
func (o trainCommon) open(inputs ...string) (*refpolicy.Weights, []train.Task, io.WriteCloser, error) {
	for _, in := range append([]string{o.Init}, inputs...) {
		if in != "" && filepath.Clean(in) == filepath.Clean(o.Out) {
			return nil, nil, nil, usagef("train: --out %s is an input checkpoint; write to another directory", o.Out)
		}
	}
	weights, err := refpolicy.Load(o.Init)
	if err != nil {
		return nil, nil, nil, err
	}
	ts, err := train.LoadTasks(o.Tasks, o.DBRoot)
	if err != nil {
		return nil, nil, nil, err
	}
	var mf io.WriteCloser = nopCloser{io.Discard}
	if o.MetricsOut != "" {
		f, err := os.Create(o.MetricsOut)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("train: metrics: %w", err)
		}
		mf = f
	}
	return weights, ts, mf, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type trainSFTOptions struct {
	trainCommon
	Data string
	Opts train.SFTOptions
}

func runTrainSFT(ctx context.Context, o trainSFTOptions, w io.Writer) (*trainSummary, error) {
	if o.Opts.Epochs < 1 || o.Opts.Batch < 1 || o.Opts.LR < 0 {
		return nil, usagef("train sft needs --epochs and --batch of at least 1 and --lr >= 0")
	}
	trs, err := train.ReadTrajectories(o.Data)
	if err != nil {
		return nil, err
	}
	weights, ts, mf, err := o.open()
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	env := train.NewEnv(grade.MetricSpider)
	defer env.Close()
	sum, err := train.SFT(ctx, env, weights, ts, trs, o.Opts, mf)
	if err != nil {
		return nil, err
	}
	if err := mf.Close(); err != nil {
		return nil, fmt.Errorf("train sft: metrics: %w", err)
	}
	return saveTrained(ctx, o.JSON, o.Out, weights, &trainSummary{SFT: sum}, w)
}

func newTrainGRPOCommand() *cli.Command {
	return &cli.Command{
		Name:  "grpo",
		Usage: "GRPO with DAPO dynamic sampling and asymmetric clipping, rewarded by execution match",
		Description: "Per step, --batch tasks are played --group-size times each at temperature 1\n" +
			"(in process, as against rlgate serve-policy); each final SQL is graded against\n" +
			"the import's gold (stages/grade) and rewarded under --reward: execution match\n" +
			"(1 or 0), or bird-softf1, BIRD's official Soft-F1 of its rows (partial credit;\n" +
			"rows pair by position, so a right answer in another row order can score 0);\n" +
			"--unsolved-only always judges by execution match. Advantages are normalised\n" +
			"within each group; groups whose rewards are all equal are dropped and counted\n" +
			"(training/n_zero_adv_groups); the clipped surrogate (ratio in [1-clip-low,\n" +
			"1+clip-high]) plus --kl-coef x KL to --kl-ref is minimised with AdamW under a\n" +
			"cosine learning rate, --ppo-epochs updates per batch. --lr 0 is the No-update\n" +
			"control: the output's tensors are identical to the input's. A curriculum stage\n" +
			"2 is another grpo run from the stage-1 checkpoint with --kl-ref stage-1 and\n" +
			"--unsolved-only, which trains on the tasks the start checkpoint has not\n" +
			"mastered: those it answers rightly in some but not all of one greedy play and\n" +
			"--group-size samples (tasks it never solves would only give groups without\n" +
			"reward variance).\n\n" + exitCodesHelp,
		Flags: append(trainCommonFlags(),
			&cli.IntFlag{Name: "group-size", Value: 8, Usage: "samples per task (G)"},
			&cli.IntFlag{Name: "steps", Value: 30, Usage: "optimizer steps"},
			&cli.IntFlag{Name: "batch", Value: 16, Usage: "tasks per step"},
			&cli.FloatFlag{Name: "lr", Value: 0.05, Usage: "peak learning rate (0: the No-update control)"},
			&cli.FloatFlag{Name: "clip-low", Value: 0.2, Usage: "ratio clip below 1"},
			&cli.FloatFlag{Name: "clip-high", Value: 0.28, Usage: "ratio clip above 1"},
			&cli.StringFlag{Name: "kl-ref", Usage: "reference checkpoint `DIR` of the KL term"},
			&cli.FloatFlag{Name: "kl-coef", Value: 0.001, Usage: "weight of the KL term (with --kl-ref)"},
			&cli.IntFlag{Name: "ppo-epochs", Value: 2, Usage: "updates per batch"},
			&cli.StringFlag{Name: "reward", Value: "execution", Usage: "`REWARD`: execution (1 when the spider rule calls the answer correct, else 0) or bird-softf1 (BIRD's official Soft-F1 of its rows, in [0, 1])"},
			&cli.BoolFlag{Name: "unsolved-only", Usage: "train only on tasks --init answers rightly in some but not all of a greedy play and --group-size samples (curriculum)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o := trainGRPOOptions{trainCommon: trainCommonOf(cmd), KLRef: cmd.String("kl-ref"), UnsolvedOnly: cmd.Bool("unsolved-only"), Reward: cmd.String("reward"),
				Opts: train.GRPOOptions{Steps: int(cmd.Int("steps")), Batch: int(cmd.Int("batch")), Group: int(cmd.Int("group-size")), LR: cmd.Float("lr"),
					ClipLow: cmd.Float("clip-low"), ClipHigh: cmd.Float("clip-high"), KLCoef: cmd.Float("kl-coef"), Decay: cmd.Float("weight-decay"),
					PPOEpochs: int(cmd.Int("ppo-epochs")), Seed: cmd.Uint64("seed")}}
			_, err := runTrainGRPO(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

type trainGRPOOptions struct {
	trainCommon
	KLRef        string
	UnsolvedOnly bool
	Reward       string // execution or bird-softf1
	Opts         train.GRPOOptions
}

// grpoRewardMetrics maps train grpo's --reward to the metric its env
// grades under: the reward is that metric's verdict, or its score.
var grpoRewardMetrics = map[string]grade.Metric{"": grade.MetricSpider, "execution": grade.MetricSpider, "bird-softf1": grade.MetricBirdSoftF1}

func runTrainGRPO(ctx context.Context, o trainGRPOOptions, w io.Writer) (*trainSummary, error) {
	if o.Opts.Steps < 1 || o.Opts.Batch < 1 || o.Opts.Group < 2 || o.Opts.LR < 0 || o.Opts.PPOEpochs < 1 {
		return nil, usagef("train grpo needs --steps, --batch and --ppo-epochs of at least 1, --group-size of at least 2 and --lr >= 0")
	}
	metric, ok := grpoRewardMetrics[o.Reward]
	if !ok {
		return nil, usagef("--reward %q: want execution or bird-softf1", o.Reward)
	}
	weights, ts, mf, err := o.open(o.KLRef)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	if o.KLRef != "" {
		if o.Opts.Ref, err = refpolicy.Load(o.KLRef); err != nil {
			return nil, err
		}
	}
	env := train.NewEnv(metric)
	defer env.Close()
	if o.UnsolvedOnly {
		if ts, err = train.Frontier(ctx, env, weights, ts, o.Opts.Group, o.Opts.Seed); err != nil {
			return nil, err
		}
	}
	sum, err := train.GRPO(ctx, env, weights, ts, o.Opts, mf)
	if err != nil {
		return nil, err
	}
	if err := mf.Close(); err != nil {
		return nil, fmt.Errorf("train grpo: metrics: %w", err)
	}
	return saveTrained(ctx, o.JSON, o.Out, weights, &trainSummary{GRPO: sum}, w)
}
