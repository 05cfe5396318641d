package main

import (
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/stage"
	"github.com/urfave/cli/v3"
)

// stageFlags are the flags of the commands that record a stage, run
// (rlgate run) or imported (rlgate import-run): its name, its run id,
// and its inputs and outputs by digest.
func stageFlags() []cli.Flag {
	return []cli.Flag{jsonFlag(),
		&cli.StringFlag{Name: "stage", Validator: ledger.CheckName, Usage: "stage `NAME` (sft, rl1, eval, ...)", Required: true},
		&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "run `ID` (default: STAGE-TIME-XXXX)"},
		&cli.StringSliceFlag{Name: "in", Usage: "input `NAME=PATH` (repeatable)"},
		&cli.StringSliceFlag{Name: "out", Usage: "output `NAME=PATH` (repeatable)"},
	}
}

// runSpec turns the command line into a stage spec.
func runSpec(cmd *cli.Command) (runner.Spec, error) {
	spec := runner.Spec{Stage: cmd.String("stage"), Run: cmd.String("run"), Argv: cmd.Args().Slice(),
		Configs: cmd.StringSlice("config"), Timeout: cmd.Duration("timeout"), FlushEvery: cmd.Duration("flush"),
		SkipPreflight: cmd.Bool("skip-preflight"), Stdout: cmd.Root().Writer, Stderr: cmd.Root().ErrWriter}
	if cmd.Bool("json") {
		spec.Stdout = nil // keep stdout clean for the JSON; the output is in the ledger
	}
	if len(spec.Argv) == 0 {
		return spec, usagef("run: give the stage's command after --")
	}
	return stage.Args{In: cmd.StringSlice("in"), Out: cmd.StringSlice("out"), Params: cmd.StringSlice("param"), Metrics: cmd.StringSlice("metrics"),
		GPU: cmd.String("gpu")}.Spec(spec)
}
