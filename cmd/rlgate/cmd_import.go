package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/stage"
	"github.com/urfave/cli/v3"
)

func newImportRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "import-run",
		Usage:     "record a finished run that a tracker recorded elsewhere (W&B, SwanLab, MLflow), executing nothing",
		ArgsUsage: "PATH[:FORMAT]",
		Description: "Reads the run at PATH (a W&B run directory or run-*.wandb file, a SwanLab run\n" +
			"directory (0.6 backup.swanlab, or 0.3-0.5 logs/ with ../runs.swanlab, read on\n" +
			"a copy) or backup.swanlab, an MLflow run directory <root>/<experiment>/<run>,\n" +
			"or any --metrics file of rlgate run) and records it as a run of --stage:\n" +
			"its metric points, its config (secrets redacted as rlgate run redacts them),\n" +
			"summary and console output as artifacts by digest, the start and end times\n" +
			"and end state the tracker recorded, and --in/--out digested as rlgate run\n" +
			"digests them. FORMAT is wandb, swanlab, mlflow or any metrics format; auto or\n" +
			"none: detected (recorded in run.end metric_formats).\n\n" +
			"The run is ok only when the tracker recorded a successful end: a W&B exit\n" +
			"record with code 0, a SwanLab footer with success, MLflow status FINISHED. A\n" +
			"run without one (killed, or still running), a non-zero exit or a trainer log\n" +
			"(which records no end) is recorded as failed, and rlgate exits 3. A truncated\n" +
			"or corrupt record file keeps every record before the fault and records a\n" +
			"finding (run.end metric_findings) for the training audit. A file that\n" +
			"cannot be read at all is an error and records nothing.\n\n" + exitCodesHelp,
		Flags: stageFlags(),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("import-run: give one PATH[:FORMAT]")
			}
			spec := runner.ImportSpec{Stage: cmd.String("stage"), Run: cmd.String("run")}
			path, format, err := metrics.ParseSpec(cmd.Args().First())
			if err != nil {
				return usagef("import-run %q: %v", cmd.Args().First(), err)
			}
			spec.Source = runner.MetricFile{Path: path, Format: format}
			if spec.Inputs, spec.Outputs, err = (stage.Args{In: cmd.StringSlice("in"), Out: cmd.StringSlice("out")}).Paths(); err != nil {
				return err
			}
			res, err := stage.Import(ctx, ledgerDir(cmd), spec)
			if err != nil {
				return err
			}
			return emitChecked(cmd.Root().Writer, cmd.Bool("json"), res, func(w io.Writer) error { return stage.WriteImported(w, res, spec.Source.Path) },
				stage.ImportFailure(res))
		},
	}
}
