package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
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
			"training audit; it does not change the stage's status. A stage whose\n" +
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
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "stage", Validator: ledger.CheckName, Usage: "stage `NAME` (sft, rl1, eval, ...)", Required: true},
			&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "run `ID` (default: STAGE-TIME-XXXX)"},
			&cli.StringSliceFlag{Name: "in", Usage: "input `NAME=PATH` (repeatable)"},
			&cli.StringSliceFlag{Name: "out", Usage: "output `NAME=PATH` (repeatable)"},
			&cli.StringSliceFlag{Name: "param", Usage: "parameter `KEY=VALUE` (repeatable)"},
			&cli.StringSliceFlag{Name: "config", Usage: "config `FILE` (YAML/JSON get a canonical form; repeatable)"},
			&cli.StringSliceFlag{Name: "metrics", Usage: "metrics `FILE[:FORMAT]` to ingest while the stage runs (FORMAT auto or none: detected; repeatable)"},
			&cli.StringFlag{Name: "gpu", Value: "auto", Usage: "GPU telemetry: `auto` (sample nvidia-smi if present) or off"},
			&cli.DurationFlag{Name: "flush", Value: runner.DefaultFlush, Usage: "send output and metrics to the ledger every `DURATION` (bounds what a crash can lose)"},
			&cli.DurationFlag{Name: "timeout", Usage: "stop the stage after `DURATION` (SIGTERM, then SIGKILL after 10s)"},
			&cli.BoolFlag{Name: "skip-preflight", Usage: "start the stage without the pre-flight reward check of its imported dataset (recorded)"},
			&cli.StringFlag{Name: "publish-to", Usage: "publish the output checkpoint to new or empty `DIR` once a gate passes for it"},
			&cli.StringFlag{Name: "publish-key", Value: defaultKey, Usage: "signing key `FILE` for --publish-to (rlgate keygen)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			spec, err := runSpec(cmd)
			if err != nil {
				return err
			}
			o := runOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Spec: spec}
			if to := cmd.String("publish-to"); to != "" {
				r, err := publish.CheckRequest(to, cmd.String("publish-key"))
				if err != nil {
					return fmt.Errorf("--publish-to: %w", err)
				}
				o.PublishTo = &r
			}
			_, err = runRun(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

// runSpec turns the command line into a stage spec.
func runSpec(cmd *cli.Command) (runner.Spec, error) {
	spec := runner.Spec{Stage: cmd.String("stage"), Run: cmd.String("run"), Argv: cmd.Args().Slice(),
		Configs: cmd.StringSlice("config"), Timeout: cmd.Duration("timeout"), FlushEvery: cmd.Duration("flush"),
		SkipPreflight: cmd.Bool("skip-preflight"), Stdout: cmd.Root().Writer, Stderr: cmd.Root().ErrWriter}
	if len(spec.Argv) == 0 {
		return spec, usagef("run: give the stage's command after --")
	}
	var err error
	if spec.Inputs, err = namedPaths("in", cmd.StringSlice("in")); err != nil {
		return spec, err
	}
	if spec.Outputs, err = namedPaths("out", cmd.StringSlice("out")); err != nil {
		return spec, err
	}
	if ps := cmd.StringSlice("param"); len(ps) > 0 {
		spec.Params = map[string]string{}
		for _, p := range ps {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return spec, usagef("--param %q: want KEY=VALUE", p)
			}
			spec.Params[k] = v
		}
	}
	for _, m := range cmd.StringSlice("metrics") {
		path, format, err := metrics.ParseSpec(m)
		if err != nil {
			return spec, usagef("--metrics %q: %v", m, err)
		}
		spec.Metrics = append(spec.Metrics, runner.MetricFile{Path: path, Format: format})
	}
	switch cmd.String("gpu") {
	case "auto":
		spec.GPU = true
	case "off":
	default:
		return spec, usagef("--gpu %q: want auto or off", cmd.String("gpu"))
	}
	return spec, nil
}

func namedPaths(flag string, vals []string) ([]runner.Named, error) {
	var out []runner.Named
	for _, v := range vals {
		k, p, ok := strings.Cut(v, "=")
		if !ok || k == "" || p == "" {
			return nil, usagef("--%s %q: want NAME=PATH", flag, v)
		}
		if err := ledger.CheckName(k); err != nil {
			return nil, usagef("--%s: name %q %v", flag, k, err)
		}
		out = append(out, runner.Named{Name: k, Path: p})
	}
	return out, nil
}

type runOptions struct {
	Dir  string
	JSON bool
	Spec runner.Spec
	// PublishTo, when set, is recorded as a publish request if the stage
	// succeeds.
	PublishTo *publish.Request
}

// runSummary is what rlgate run --json prints: the stage's result and
// the publish request recorded with it.
type runSummary struct {
	*runner.Result
	PublishRequest *publishRequested `json:"publish_request,omitempty"`
}

type publishRequested struct {
	Seq           int64         `json:"seq"`
	To            string        `json:"to"`
	ModelIdentity ledger.Digest `json:"model_identity"`
}

func runRun(ctx context.Context, opts runOptions, w io.Writer) (*runner.Result, error) {
	l, err := ledger.Open(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if opts.JSON {
		opts.Spec.Stdout = nil // keep stdout clean for the JSON; the output is in the ledger
	}
	res, err := runner.Execute(ctx, l, opts.Spec)
	if err != nil {
		return nil, err
	}
	sum := runSummary{Result: res}
	if opts.PublishTo != nil && res.Status == records.StatusOK {
		e, id, err := publish.RecordRequest(ctx, l, res.Run, *opts.PublishTo)
		if err != nil {
			return res, fmt.Errorf("--publish-to: %w", err)
		}
		sum.PublishRequest = &publishRequested{Seq: e.Seq, To: opts.PublishTo.To, ModelIdentity: id}
	}
	err = emit(w, opts.JSON, sum, func(w io.Writer) error {
		if p := res.Preflight; p != nil && p.Passed {
			fmt.Fprintf(w, "rlgate: pre-flight (entry %d): %d databases present and as imported under %s; gold graded against itself scored 1 on %d of %d sampled tasks\n",
				res.PreflightSeq, p.Needed, p.DBRoot, p.SelfGrade.Passed, p.SelfGrade.Sample)
		}
		fmt.Fprintf(w, "rlgate: run %s (stage %s) %s", res.Run, res.Stage, res.Status)
		if res.Reason != "" {
			fmt.Fprintf(w, ": %s", res.Reason)
		}
		fmt.Fprintf(w, "\nrlgate: entries %d..%d, %d metric points, %.1fs\n", res.StartSeq, res.EndSeq, res.MetricPoints, res.DurationS)
		if n := len(res.MetricFindings); n > 0 {
			fmt.Fprintf(w, "rlgate: %d metrics warning(s) recorded in run.end (metric_findings); the training audit will see them\n", n)
		}
		for name, d := range res.Outputs {
			fmt.Fprintf(w, "rlgate: output %s %s\n", name, d)
		}
		if p := sum.PublishRequest; p != nil {
			fmt.Fprintf(w, "rlgate: publish to %s requested (entry %d); it happens when a gate passes for model %s\n", p.To, p.Seq, p.ModelIdentity)
		} else if opts.PublishTo != nil {
			fmt.Fprintf(w, "rlgate: the stage did not succeed; no publish to %s was requested\n", opts.PublishTo.To)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	switch res.Status {
	case records.StatusOK:
		return res, nil
	case records.StatusInterrupted:
		return res, context.Canceled
	}
	msg := fmt.Sprintf("stage %s failed (%s); its record is run %s", res.Stage, res.Reason, res.Run)
	if code := res.StageExit(); code > 0 {
		return res, stageExited{msg: msg, code: code}
	}
	return res, errors.New(msg)
}
