package main

import (
	"context"
	"io"

	labtrain "github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/workflow/train"
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
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "out", Required: true, Usage: "checkpoint `DIR` to write"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "`SEED` of the tie-breaking noise"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			t, err := labtrain.Init(ctx, cmd.String("out"), cmd.Uint64("seed"))
			return printTrained(cmd, t, err)
		},
	}
}

// printTrained prints what a train subcommand wrote, or returns its
// error.
func printTrained(cmd *cli.Command, t *labtrain.Trained, err error) error {
	if err != nil {
		return err
	}
	return emit(cmd, t, func(w io.Writer) error { return train.WriteText(w, t) })
}

// trainCommonFlags are the flags sft and grpo share.
func trainCommonFlags() []cli.Flag {
	return []cli.Flag{jsonFlag(),
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
			o := labtrain.SFTOptions{Epochs: cmd.Int("epochs"), Batch: cmd.Int("batch"), LR: cmd.Float("lr"), Decay: cmd.Float("weight-decay"), Seed: cmd.Uint64("seed")}
			t, err := train.SFT(ctx, trainJob(cmd), cmd.String("data"), o)
			return printTrained(cmd, t, err)
		},
	}
}

// trainJob is the job the flags sft and grpo share describe.
func trainJob(cmd *cli.Command) labtrain.Job {
	return labtrain.Job{Init: cmd.String("init"), Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"), Out: cmd.String("out"), MetricsOut: cmd.String("metrics-out")}
}
