package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlgate/rlgate/lab/refpolicy/train"
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
			t, err := train.Init(ctx, cmd.String("out"), cmd.Uint64("seed"))
			return printTrained(cmd, t, err)
		},
	}
}

// printTrained prints what a train subcommand wrote, or returns its
// error.
func printTrained(cmd *cli.Command, t *train.Trained, err error) error {
	if err != nil {
		return err
	}
	return emit(cmd.Root().Writer, cmd.Bool("json"), t, func(w io.Writer) error {
		if s := t.SFT; s != nil {
			fmt.Fprintf(w, "sft: %d of %d trajectories matched, %d steps, loss %.4f -> %.4f\n", s.Examples, s.Trajectories, s.Steps, s.LossFirst, s.LossLast)
		}
		if s := t.GRPO; s != nil {
			fmt.Fprintf(w, "grpo: %d steps, %d episodes, %d of %d groups dropped for zero variance, reward %.3f -> %.3f\n",
				s.Steps, s.Episodes, s.ZeroAdvGroups, s.Groups, s.MeanRewardHead, s.MeanRewardTail)
		}
		_, err := fmt.Fprintf(w, "wrote %s\nmodel identity: %s\n", t.Out, t.ModelIdentity)
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
			o := train.SFTOptions{Epochs: int(cmd.Int("epochs")), Batch: int(cmd.Int("batch")), LR: cmd.Float("lr"), Decay: cmd.Float("weight-decay"), Seed: cmd.Uint64("seed")}
			if o.Epochs < 1 || o.Batch < 1 || o.LR < 0 {
				return usagef("train sft needs --epochs and --batch of at least 1 and --lr >= 0")
			}
			j, err := trainJob(cmd)
			if err != nil {
				return err
			}
			t, err := train.RunSFT(ctx, j, cmd.String("data"), o)
			return printTrained(cmd, t, err)
		},
	}
}

// trainJob is the job the flags sft and grpo share describe. An --out
// that is the --init checkpoint (or --kl-ref) is refused: training would
// overwrite its own input.
func trainJob(cmd *cli.Command) (train.Job, error) {
	j := train.Job{Init: cmd.String("init"), Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"), Out: cmd.String("out"), MetricsOut: cmd.String("metrics-out")}
	for _, in := range []string{j.Init, cmd.String("kl-ref")} {
		if in != "" && filepath.Clean(in) == filepath.Clean(j.Out) {
			return j, usagef("train: --out %s is an input checkpoint; write to another directory", j.Out)
		}
	}
	return j, nil
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
			o := train.GRPOOptions{Steps: int(cmd.Int("steps")), Batch: int(cmd.Int("batch")), Group: int(cmd.Int("group-size")), LR: cmd.Float("lr"),
				ClipLow: cmd.Float("clip-low"), ClipHigh: cmd.Float("clip-high"), KLCoef: cmd.Float("kl-coef"), Decay: cmd.Float("weight-decay"),
				PPOEpochs: int(cmd.Int("ppo-epochs")), Seed: cmd.Uint64("seed")}
			if o.Steps < 1 || o.Batch < 1 || o.Group < 2 || o.LR < 0 || o.PPOEpochs < 1 {
				return usagef("train grpo needs --steps, --batch and --ppo-epochs of at least 1, --group-size of at least 2 and --lr >= 0")
			}
			reward, ok := grpoRewardMetrics[cmd.String("reward")]
			if !ok {
				return usagef("--reward %q: want execution or bird-softf1", cmd.String("reward"))
			}
			j, err := trainJob(cmd)
			if err != nil {
				return err
			}
			t, err := train.RunGRPO(ctx, train.GRPOJob{Job: j, Opts: o, KLRef: cmd.String("kl-ref"), Reward: reward, UnsolvedOnly: cmd.Bool("unsolved-only")})
			return printTrained(cmd, t, err)
		},
	}
}

// grpoRewardMetrics maps train grpo's --reward to the metric its env
// grades under: the reward is that metric's verdict, or its score.
var grpoRewardMetrics = map[string]grade.Metric{"": grade.MetricSpider, "execution": grade.MetricSpider, "bird-softf1": grade.MetricBirdSoftF1}
