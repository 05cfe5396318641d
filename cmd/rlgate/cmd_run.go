package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/stage"
	"github.com/urfave/cli/v3"
)

func newRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run one stage (SFT, RL, export, ...) through the ledger",
		ArgsUsage: "-- CMD [ARGS...]",
		// --param lr=1e-6,2e-6 is one value: commas never split a flag here.
		DisableSliceFlagSeparator: true,
		Description: "Hashes the inputs (checkpoint manifests for safetensors directories, dataset\n" +
			"manifests otherwise) and configs, records the git commit and diff, an\n" +
			"allow-listed environment and the host; runs CMD by argv (no shell unless\n" +
			"CMD is one), teeing its output into the ledger and ingesting --metrics\n" +
			"files and GPU telemetry while it runs; then hashes the outputs. Secrets in\n" +
			"the environment, --param values and CMD's arguments are redacted, and masked\n" +
			"in the recorded output (docs/FORMAT.md, Secrets).\n\n" +
			"The stage's own exit decides its status. A stage that exits non-zero is\n" +
			"recorded as failed with its exit code, and rlgate exits with that code (a\n" +
			"stage exiting 7 makes rlgate exit 7); a timeout, a signal or a declared\n" +
			"output missing fails it with exit 1. A metrics file that does not parse,\n" +
			"is never written or writes a key twice in one step is a warning, printed\n" +
			"as soon as it is seen and recorded in run.end's metric_findings for the\n" +
			"training audit; it does not change the stage's status. A metrics file\n" +
			"already there when the stage starts (an earlier run's, when repro runs the\n" +
			"stage again) is read once the stage has written to it, from where the\n" +
			"stage's own lines start (all of it when the stage truncated or replaced\n" +
			"it), or, left unchanged, whole once the stage exits; run.end's\n" +
			"metric_prior_files says which. A stage whose\n" +
			"recorder is killed is marked interrupted at the ledger's next open.\n\n" +
			"Pre-flight: when an input is a dataset directory written by rlgate data\n" +
			"import, before CMD starts rlgate checks that every database its gold needs\n" +
			"is present under the root the stage grades on (a db_root parameter, else\n" +
			"the import's) with the digest the import recorded, and that gold graded\n" +
			"against itself scores 1 on at least 99% of a seeded sample of 200. The\n" +
			"result is recorded (a preflight entry; the reward audit cites it instead\n" +
			"of grading again). If it fails, CMD is not started: the run is recorded\n" +
			"as failed with the reason and rlgate exits 1. --skip-preflight starts CMD\n" +
			"without it, recorded in run.start.\n\n" +
			"Metric formats: verl, verl-console, trl, tensorboard, jsonl, llamafactory\n" +
			"(trainer_log.jsonl), skyrl-console, openrlhf-console, and the tracker runs\n" +
			"wandb (a run directory or run-*.wandb), swanlab (a run directory or\n" +
			"backup.swanlab) and mlflow (a run directory, read when the stage ends)\n" +
			"(FILE:FORMAT). With\n" +
			"FILE:auto or no :FORMAT the format is detected from the file's first lines,\n" +
			"printed, and recorded in run.end (metric_formats); a file that reads as two\n" +
			"formats or none is a warning naming the lines, and is not ingested.\n\n" +
			"--publish-to DIR on a training stage asks for its output checkpoint to be\n" +
			"published (rlgate publish) once a gate passes for its model identity: DIR and\n" +
			"--publish-key are checked before CMD starts, and when the stage succeeds a\n" +
			"publish.request entry records them with the run. The next rlgate gate (or a\n" +
			"repro gate: stage) whose verdict is for that model publishes it and records\n" +
			"the publish if the verdict passed, and says the publish is withheld if it\n" +
			"failed; the request waits for a later gate.\n\n" + exitCodesHelp +
			"\nA stage that exits non-zero: its own exit code.",
		Flags: append(stageFlags(),
			&cli.StringSliceFlag{Name: "param", Usage: "parameter `KEY=VALUE` (repeatable)"},
			&cli.StringSliceFlag{Name: "config", Usage: "config `FILE` (YAML/JSON get a canonical form; repeatable)"},
			&cli.StringSliceFlag{Name: "metrics", Usage: "metrics `FILE[:FORMAT]` to ingest while the stage runs (FORMAT auto or none: detected; repeatable)"},
			&cli.StringFlag{Name: "gpu", Value: "auto", Usage: "GPU telemetry: `auto` (sample nvidia-smi if present) or off"},
			&cli.DurationFlag{Name: "flush", Value: runner.DefaultFlush, Usage: "send output and metrics to the ledger every `DURATION` (bounds what a crash can lose)"},
			&cli.DurationFlag{Name: "timeout", Usage: "stop the stage after `DURATION` (SIGTERM, then SIGKILL after 10s)"},
			&cli.BoolFlag{Name: "skip-preflight", Usage: "start the stage without the pre-flight reward check of its imported dataset (recorded)"},
			&cli.StringFlag{Name: "publish-to", Usage: "publish the output checkpoint to new or empty `DIR` once a gate passes for it"},
			&cli.StringFlag{Name: "publish-key", Value: defaultKey, Usage: "signing key `FILE` for --publish-to (rlgate keygen)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			spec, err := runSpec(cmd)
			if err != nil {
				return err
			}
			var pub *stage.Publish
			if to := cmd.String("publish-to"); to != "" {
				pub = &stage.Publish{To: to, Key: cmd.String("publish-key")}
			}
			r, err := stage.Run(ctx, ledgerDir(cmd), spec, pub)
			if err != nil {
				return err
			}
			if err := emit(cmd, r, func(w io.Writer) error { return stage.WriteRun(w, r, pub) }); err != nil {
				return err
			}
			return stageError(r.Result)
		},
	}
}

// stageError is how rlgate exits for a stage's status: 0 when it
// succeeded, 130 when it was interrupted, the stage's own exit code when
// it exited non-zero, else 1.
func stageError(r *runner.Result) error {
	switch r.Status {
	case records.StatusOK:
		return nil
	case records.StatusInterrupted:
		return context.Canceled
	}
	msg := fmt.Sprintf("stage %s failed (%s); its record is run %s", r.Stage, r.Reason, r.Run)
	if code := r.StageExit(); code > 0 {
		return stageExited{msg: msg, code: code}
	}
	return errors.New(msg)
}
