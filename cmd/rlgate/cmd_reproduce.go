package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/workflow/reproduce"
	"github.com/urfave/cli/v3"
)

func newReproduceCommand() *cli.Command {
	return &cli.Command{
		Name:      "reproduce",
		Usage:     "run recorded stages again from their recorded inputs and prove every output",
		ArgsUsage: "[RUN...]",
		Description: "Runs each named run again (or each --stage's latest run that ended ok;\n" +
			"with --pipeline, the pipeline's stages, or those of --stage, in dependency\n" +
			"order) in a scratch work directory: its recorded inputs and configs are laid\n" +
			"out there with their paths relative to the stage's directory, each checked\n" +
			"against its recorded digest (copied from the recorded path when it still\n" +
			"matches, or from the blob store); a missing or changed one is named with both\n" +
			"digests and the stage is not run. A stage reads what the stages reproduced\n" +
			"before it wrote. The recorded command runs through rlgate run with the\n" +
			"recorded params and environment, laid over this one (which gives PATH and the\n" +
			"secrets the recording redacted: one that is missing is named, and the stage\n" +
			"is not run); the rlgate commands a stage runs record into a ledger of the\n" +
			"reproduction's own in the work directory. A changed code version is warned\n" +
			"about and recorded. Every output is then compared with the recorded one: files\n" +
			"and trees by digest, down to the first differing byte; checkpoints tensor by\n" +
			"tensor (the first differing tensor, its max |Δ| and how many elements\n" +
			"differ); metric series point by point; an rlgate eval --json summary task by\n" +
			"task. A grading run is reproduced by grading its rollout's recorded\n" +
			"trajectories again, outcomes task by task; a rollout by playing it again\n" +
			"against its replay (as serve-replay serves it), every request byte for byte.\n" +
			"A reproduce entry records the verdict of each run; the new run's stage is\n" +
			"reproduce.STAGE. The work directory (--workdir, new or empty) is removed at\n" +
			"the end unless --keep.\n" +
			"See docs/REPRODUCE.md. Exits 3 unless every output reproduced.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringSliceFlag{Name: "stage", Usage: "reproduce `STAGE`'s latest run that ended ok (repeatable)"},
			&cli.BoolFlag{Name: "pipeline", Usage: "reproduce the pipeline file's stages in dependency order"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Value: "rlgate.yaml", Usage: "pipeline `FILE` (with --pipeline)"},
			&cli.StringFlag{Name: "workdir", Usage: "scratch `DIR` (new or empty); default: a temporary one"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the work directory"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o := reproduce.Options{Runs: cmd.Args().Slice(), Stages: cmd.StringSlice("stage"), WorkDir: cmd.String("workdir"),
				Keep: cmd.Bool("keep")}
			if cmd.Bool("pipeline") {
				o.Pipeline = cmd.String("file")
			}
			w, ew := cmd.Root().Writer, cmd.Root().ErrWriter
			if !cmd.Bool("json") {
				o.Stdout, o.Stderr = w, ew
				o.Starting = func(stage, run string) { fmt.Fprintf(w, "rlgate: reproduce %s (run %s)\n", stage, run) }
			}
			o.Warn = func(msg string) { fmt.Fprintln(ew, "rlgate: warning: "+msg) }
			rs, err := reproduce.RunIn(ctx, ledgerDir(cmd), o)
			if errors.Is(err, reproduce.ErrNothingNamed) {
				return usageError{msg: err.Error(), cmd: "rlgate reproduce"}
			}
			if err != nil {
				return err
			}
			return emitChecked(w, cmd.Bool("json"), rs, func(w io.Writer) error { return reproduce.WriteText(w, rs) }, reproduce.Failure(rs))
		},
	}
}
