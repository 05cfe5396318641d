package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/stages/pipeline"
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
			"why each stage runs or is skipped. --dry-run only says.\n\n" +
			"A stage has cmd (a string run by sh -c, or an argv list), deps and outs (a\n" +
			"mapping NAME: PATH, or a list of paths as in dvc.yaml, each named by its\n" +
			"path), params, configs, metrics, timeout, gpu and gate. A stage with\n" +
			"gate: POLICY (a policy file, or paper-grade) is gated once it is up to date\n" +
			"(see rlgate gate); a failed gate fails the stage and nothing downstream runs.\n" +
			"Like rlgate gate, a gate that passes publishes the requests (rlgate run\n" +
			"--publish-to) waiting for its model.\n" +
			"The policy's train: may name a training run by its stage (rl: rl2): repro\n" +
			"takes the run that stage ran, or was up to date with.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Value: "rlgate.yaml", Usage: "pipeline `FILE`"},
			&cli.BoolFlag{Name: "dry-run", Usage: "decide and explain, run nothing"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			opts := reproOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), File: cmd.String("file"), DryRun: cmd.Bool("dry-run"),
				Stages: cmd.Args().Slice(), Stdout: cmd.Root().Writer, Stderr: cmd.Root().ErrWriter}
			_, err := runRepro(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type reproOptions struct {
	Dir, File      string
	JSON, DryRun   bool
	Stages         []string
	Stdout, Stderr io.Writer
}

func runRepro(ctx context.Context, opts reproOptions, w io.Writer) ([]pipeline.Decision, error) {
	f, err := pipeline.Load(opts.File)
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	po := pipeline.Options{DryRun: opts.DryRun, Gate: reproGate(l, nil)}
	if !opts.JSON {
		po.Stdout, po.Stderr = opts.Stdout, opts.Stderr
		po.Progress = func(d pipeline.Decision) {
			fmt.Fprintf(w, "rlgate: %-10s %-9s %s\n", d.Stage, d.Action, strings.Join(d.Reasons, "; "))
		}
	}
	ds, err := pipeline.Repro(ctx, l, f, opts.Stages, po)
	if err != nil {
		return ds, err
	}
	if opts.JSON {
		if err := emit(w, true, ds, nil); err != nil {
			return ds, err
		}
	}
	for _, d := range ds {
		if d.Action == pipeline.ActionFailed || (d.Action == pipeline.ActionBlocked && !opts.DryRun) {
			return ds, fmt.Errorf("repro: stage %s %s: %s", d.Stage, d.Action, strings.Join(d.Reasons, "; "))
		}
	}
	return ds, nil
}

// reproGate checks a stage's gate policy for pipeline.Repro, with training
// runs named by their stages resolved to the stages' runs; the verdict is
// also kept in *last when last is not nil.
func reproGate(l *ledger.Ledger, last **audit.Verdict) func(ctx context.Context, policy, dir string, runs map[string]string) (bool, string, error) {
	return func(ctx context.Context, policy, dir string, runs map[string]string) (bool, string, error) {
		p, err := audit.PolicyRef(policy, dir)
		if err != nil {
			return false, "", err
		}
		v, err := audit.Gate(ctx, l, p.InPipeline(runs), audit.GateOptions{})
		if err != nil {
			return false, "", err
		}
		if last != nil {
			*last = v
		}
		// Like rlgate gate, a verdict publishes the requests waiting for
		// its model (rlgate run --publish-to) when it passed.
		outcomes, err := publish.AfterGate(ctx, l, v)
		summary := v.Summary()
		for _, o := range outcomes {
			summary += "; " + publishOutcome(o)
		}
		return v.OK, summary, err
	}
}
