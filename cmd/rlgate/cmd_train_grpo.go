package main

import (
	"context"

	labtrain "github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/workflow/train"
	"github.com/urfave/cli/v3"
)

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
			o := labtrain.GRPOOptions{Steps: cmd.Int("steps"), Batch: cmd.Int("batch"), Group: cmd.Int("group-size"), LR: cmd.Float("lr"),
				ClipLow: cmd.Float("clip-low"), ClipHigh: cmd.Float("clip-high"), KLCoef: cmd.Float("kl-coef"), Decay: cmd.Float("weight-decay"),
				PPOEpochs: cmd.Int("ppo-epochs"), Seed: cmd.Uint64("seed")}
			t, err := train.GRPO(ctx, labtrain.GRPOJob{Job: trainJob(cmd), Opts: o, KLRef: cmd.String("kl-ref"), UnsolvedOnly: cmd.Bool("unsolved-only")}, cmd.String("reward"))
			return printTrained(cmd, t, err)
		},
	}
}
