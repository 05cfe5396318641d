package main

import (
	"context"

	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/workflow/repro"
	"github.com/urfave/cli/v3"
)

func newReproCommand() *cli.Command {
	return &cli.Command{
		Name:      "repro",
		Usage:     "run a pipeline's stages that are out of date, in dependency order",
		ArgsUsage: "[STAGE...]",
		Description: "Reads rlgate.yaml (or --file) and, for the named stages and everything\n" +
			"upstream of them (all stages if none are named), runs each stage whose\n" +
			"command, params, configs or input digests differ from its last successful\n" +
			"run, or whose outputs no longer have the digests that run recorded. Says\n" +
			"why each stage runs or is skipped. Each stage's outputs' directories are made\n" +
			"before it runs. The stages get this command's ledger and blob store as\n" +
			"RLGATE_LEDGER and RLGATE_BLOBS (a password in the URL is masked where the\n" +
			"run records its environment).\n\n" +
			"--dry-run says, runs nothing and writes nothing: the ledger is opened\n" +
			"read-only, gates decide without recording (as gate --dry-run). It also names,\n" +
			"stage by stage, what would fail once the stage runs, and then exits 1: a\n" +
			"command not found on PATH (the first word of the command), an output\n" +
			"directory that cannot be made, a gate policy that is missing or names a\n" +
			"training stage that is neither in the pipeline nor in the ledger, an input\n" +
			"that is missing and that no stage writes.\n\n" +
			"A stage has cmd (a string run by sh -c, or an argv list), deps and outs (a\n" +
			"mapping NAME: PATH, or a list of paths as in dvc.yaml, each named by its\n" +
			"path), params, configs, metrics, timeout, gpu and gate. A stage with\n" +
			"gate: POLICY (a policy file, or paper-grade) is gated once it is up to date\n" +
			"(see rlgate gate); a failed gate fails the stage and nothing downstream runs.\n" +
			"Like rlgate gate, a gate that passes publishes the requests (rlgate run\n" +
			"--publish-to) waiting for its model.\n" +
			"The policy's train: may name a training run by its stage (rl: rl2): repro\n" +
			"takes the run that stage ran, or was up to date with; any other stage name\n" +
			"is that stage's latest run that ended ok (as for rlgate gate). Every gate\n" +
			"policy is loaded and checked before any stage runs.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Value: "rlgate.yaml", Usage: "pipeline `FILE`"},
			&cli.BoolFlag{Name: "dry-run", Usage: "decide and explain, run and record nothing, name what would fail"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			env, err := repro.Environ(cmd.String("ledger"), cmd.String("blobs"), s3Options(cmd))
			if err != nil {
				return err
			}
			w, asJSON := cmd.Root().Writer, cmd.Bool("json")
			o := repro.Options{File: cmd.String("file"), Stages: cmd.Args().Slice(), DryRun: cmd.Bool("dry-run"), Environ: env}
			if !asJSON {
				o.Stdout, o.Stderr = w, cmd.Root().ErrWriter
				o.Progress = func(d pipeline.Decision) { repro.WriteDecision(w, d) }
			}
			ds, err := repro.Run(ctx, ledgerDir(cmd), o)
			if err != nil {
				return err
			}
			if asJSON {
				if err := emit(cmd, ds, nil); err != nil {
					return err
				}
			}
			return repro.Stopped(ds, o.DryRun)
		},
	}
}
