// Package reproduce runs recorded stages again and proves their outputs
// (rlgate reproduce): each run's recorded inputs are laid out in a
// scratch work directory, checked against their recorded digests; the
// recorded command runs there through stages/runner with the recorded
// parameters, configs and environment; and every output is compared with
// the recorded one (files and trees by digest, down to the first
// differing byte; checkpoints tensor by tensor; metric series point by
// point). A reproduce entry records the verdict. docs/REPRODUCE.md says
// what "reproduced" means for each kind of output.
package reproduce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
)

// StagePrefix begins the stage name of a reproduction's run
// ("reproduce.rl2"), so that nothing that takes a stage's latest run (repro,
// the gate's train: rl2, report) takes a run whose outputs lay in a scratch
// directory since removed.
const StagePrefix = "reproduce."

// StageLedger is the folder of the work directory that holds the ledger
// the reproduced stages' own rlgate commands record into.
const StageLedger = ".rlgate-reproduce"

// Result is one run's reproduction and the seq of its reproduce entry.
type Result struct {
	runner.Reproduction
	Seq int64 `json:"seq"`
}

// Options says what to reproduce and how.
type Options struct {
	Runs []string // runs by id
	// Stages are reproduced by their latest run that ended ok; with
	// Pipeline, in the pipeline's dependency order.
	Stages []string
	// Pipeline, if set, is a pipeline file: its stages (or those of Stages)
	// are reproduced in dependency order, each reading what the ones before
	// it reproduced.
	Pipeline string
	// WorkDir is the scratch directory (it must not exist, or be empty);
	// empty: a new temporary one. It is removed at the end unless Keep.
	WorkDir string
	Keep    bool
	// Environ is the environment the recorded one is laid over: it gives
	// what the recording left out (PATH, HOME) and the secrets the
	// recording redacted. nil: rlgate's own. Its RLGATE_LEDGER and
	// RLGATE_BLOBS are replaced by the work directory's StageLedger.
	Environ        []string
	Stdout, Stderr io.Writer // the stages' output; nil: ledger only
	// Warn hears each warning (a changed code version) as it is found.
	Warn func(string)
	// Starting, if set, hears each run just before it is reproduced.
	Starting func(stage, run string)
}

// Run reproduces the runs opts names, in order, in one work directory,
// and records a reproduce entry for each. Its error is one that stopped
// it; a run that did not reproduce is a Result with Reproduced false.
func Run(ctx context.Context, l *ledger.Ledger, o Options) (results []Result, err error) {
	runs, err := selectRuns(ctx, l, o)
	if err != nil {
		return nil, err
	}
	work, err := workDir(o.WorkDir)
	if err != nil {
		return nil, err
	}
	if !o.Keep {
		defer func() {
			if rerr := os.RemoveAll(work); rerr != nil && err == nil {
				err = fmt.Errorf("reproduce: remove the work directory: %w", rerr)
			}
		}()
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	// The rlgate commands a stage runs record into a ledger of the
	// reproduction's own, so that one that records a run under a fixed id
	// (rlgate eval --run eval-base) runs again as it first did.
	sl, err := ledger.Init(ctx, filepath.Join(work, StageLedger))
	if err != nil {
		return nil, fmt.Errorf("reproduce: the stages' ledger: %w", err)
	}
	sl.Close()
	o.Environ = append(slices.DeleteFunc(slices.Clone(o.Environ), func(kv string) bool {
		return strings.HasPrefix(kv, ledger.EnvLedger+"=") || strings.HasPrefix(kv, ledger.EnvBlobs+"=")
	}), ledger.EnvLedger+"="+filepath.Join(work, StageLedger))
	for _, run := range runs {
		r, err := l.RunStatus(ctx, run)
		if err != nil {
			return results, fmt.Errorf("reproduce: %w", err)
		}
		if !r.EndedOK() {
			return results, fmt.Errorf("reproduce: run %s is %s: only a run that ended ok has outputs to prove. Try: another run", run, r.Status)
		}
		if o.Starting != nil {
			o.Starting(r.Stage, run)
		}
		b, err := reproduceOne(ctx, l, r, work, o)
		if err != nil {
			return results, fmt.Errorf("reproduce %s: %w", run, err)
		}
		es, err := l.Append(context.WithoutCancel(ctx), ledger.Record{Kind: records.KindReproduce, Body: b})
		if err != nil {
			return results, err
		}
		results = append(results, Result{Reproduction: b, Seq: es[0].Seq})
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	return results, nil
}

// reproduceOne reproduces one run: a grading by grading its rollout
// again, a rollout by playing it against its replay, any other by running
// its recorded command again.
func reproduceOne(ctx context.Context, l *ledger.Ledger, r ledger.Run, work string, o Options) (runner.Reproduction, error) {
	switch r.Stage {
	case StageGrade:
		return reproduceGrading(ctx, l, r)
	case rollout.Stage:
		return reproduceRollout(ctx, l, r)
	}
	rec, err := runner.ReadRecording(ctx, l, r.Run)
	if err != nil {
		return runner.Reproduction{}, err
	}
	return reproduceRun(ctx, l, rec, work, o)
}

// selectRuns resolves the runs, stages and pipeline opts names to runs.
func selectRuns(ctx context.Context, l *ledger.Ledger, o Options) ([]string, error) {
	stages := o.Stages
	if o.Pipeline != "" {
		f, err := pipeline.Load(o.Pipeline)
		if err != nil {
			return nil, err
		}
		stages = nil
		for _, s := range f.Stages {
			if len(o.Stages) == 0 || slices.Contains(o.Stages, s.Name) {
				stages = append(stages, s.Name)
			}
		}
		for _, s := range o.Stages {
			if !slices.Contains(stages, s) {
				return nil, fmt.Errorf("reproduce: pipeline %s has no stage %q", o.Pipeline, s)
			}
		}
	}
	if len(o.Runs) == 0 && len(stages) == 0 {
		return nil, errors.New("reproduce: name runs, --stage or --pipeline")
	}
	runs := slices.Clone(o.Runs)
	if len(stages) == 0 {
		return runs, nil
	}
	all, err := l.Runs(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range stages {
		last := ""
		for _, r := range all {
			if r.Stage == s && r.EndedOK() {
				last = r.Run
			}
		}
		if last == "" {
			return nil, fmt.Errorf("reproduce: stage %s has no run that ended ok. Try: rlgate runs", s)
		}
		runs = append(runs, last)
	}
	return runs, nil
}

// workDir makes the scratch directory: dir, which must not exist or be
// empty (a reproduction must not read what it did not lay out), or a new
// temporary one.
func workDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rlgate-reproduce-"); err != nil {
			return "", err
		}
	} else {
		if es, err := os.ReadDir(dir); err == nil && len(es) > 0 {
			return "", fmt.Errorf("reproduce: --workdir %s is not empty. Try: a new directory", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("reproduce: --workdir: %w", err)
		}
	}
	// The path the stages see as their directory, links resolved, since
	// that is the path they write into files (see relocate).
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}
