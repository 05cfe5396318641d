// Package repro brings a pipeline up to date with its gates (rlgate
// repro): the pipeline file's out-of-date stages run in dependency order
// (stages/pipeline), each gated stage is gated and its verdict acted on
// (workflow/gate), and what stopped the pipeline, or on a dry run what
// would stop it, is one error that names every stage at fault.
package repro

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/workflow/gate"
)

// Options says what to bring up to date and how.
type Options struct {
	File string // the pipeline file
	// Stages are the stages to bring up to date, with everything upstream
	// of them; none: every stage.
	Stages []string
	// DryRun decides and explains, runs and records nothing: the ledger is
	// opened read-only and the gates decide without recording.
	DryRun bool
	// Environ is the stages' environment; nil: rlgate's own.
	Environ        []string
	Stdout, Stderr io.Writer // the stages' output; nil: ledger only
	// Progress, if set, hears each decision as it is made.
	Progress func(pipeline.Decision)
}

// Run loads the pipeline file, opens the ledger at dir and brings the
// selected stages up to date (pipeline.Repro) with every gate policy
// checked before any stage runs (gate.CheckForPipeline) and each gated
// stage gated once it is up to date (gate.ForPipeline). Its error is one
// that stopped the repro itself; a stage that failed is in the decisions,
// and Stopped says so.
func Run(ctx context.Context, dir string, o Options) ([]pipeline.Decision, error) {
	f, err := pipeline.Load(o.File)
	if err != nil {
		return nil, err
	}
	l, err := gate.Open(ctx, dir, o.DryRun)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return pipeline.Repro(ctx, l, f, o.Stages, pipeline.Options{DryRun: o.DryRun, Stdout: o.Stdout, Stderr: o.Stderr, Progress: o.Progress,
		Gate: gate.ForPipeline(l, o.DryRun, nil), CheckGate: gate.CheckForPipeline(l, f), Environ: o.Environ})
}

// Stopped says what stopped the pipeline: the first stage that failed or
// (when not a dry run) was blocked; or, on a dry run, every problem that
// would stop it once it runs, stage by stage. Nil: nothing did.
func Stopped(ds []pipeline.Decision, dryRun bool) error {
	for _, d := range ds {
		if d.Action == pipeline.ActionFailed || (d.Action == pipeline.ActionBlocked && !dryRun) {
			return fmt.Errorf("repro: stage %s %s: %s", d.Stage, d.Action, strings.Join(d.Reasons, "; "))
		}
	}
	var problems []string
	for _, d := range ds {
		for _, p := range d.Problems {
			problems = append(problems, "stage "+d.Stage+": "+p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	noun := "problems"
	if len(problems) == 1 {
		noun = "problem"
	}
	return fmt.Errorf("repro --dry-run: %d %s would stop the pipeline once it runs: %s. Nothing was run or recorded",
		len(problems), noun, strings.Join(problems, "; "))
}
