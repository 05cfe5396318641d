// Package gate runs the gate and acts on its verdict: a recorded verdict
// bound to a model publishes the requests waiting for that model when it
// passed, and withholds them when it failed (docs/PUBLISH.md). rlgate gate,
// rlgate repro and the demo all gate through it, so a verdict is acted on
// the same way whichever command decided it; rlgate publish publishes a
// gated run, named by its stage or its id, through it too.
package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Result is a gate's verdict and what became of the publish requests
// waiting for it; rlgate gate --json prints it.
type Result struct {
	*audit.Verdict
	Publishes []publish.RequestOutcome `json:"publishes,omitempty"`
}

// Open opens the ledger in dir for a gate: read-only for a dry run, which
// records nothing and so runs on a ledger the user cannot write.
func Open(ctx context.Context, dir string, dryRun bool) (*ledger.Ledger, error) {
	if dryRun {
		return ledger.OpenReadOnly(ctx, dir)
	}
	return ledger.Open(ctx, dir)
}

// Run decides the experiment of l under p (audit.Gate), then acts on the
// publish requests waiting for the verdict's model (publish.AfterGate). A
// failed publish is returned as the error beside the result, which holds
// the verdict and every outcome.
func Run(ctx context.Context, l *ledger.Ledger, p audit.Policy, o audit.GateOptions) (*Result, error) {
	v, err := audit.Gate(ctx, l, p, o)
	if err != nil {
		return nil, err
	}
	outcomes, err := publish.AfterGate(ctx, l, v)
	return &Result{Verdict: v, Publishes: outcomes}, err
}

// Publish publishes the checkpoint of the training run o names
// (publish.Publish), where o.Run may name the run's stage: its latest run
// that ended ok. A name that is neither a run nor a stage is left to
// publish.Publish, which says so once it has checked the key.
func Publish(ctx context.Context, l *ledger.Ledger, o publish.Options) (*publish.Result, error) {
	if run, err := audit.StageRun(ctx, l, o.Run); err == nil {
		o.Run = run
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return nil, err
	}
	return publish.Publish(ctx, l, o)
}

// Describe says in a line what a gate did to a publish request.
func Describe(o publish.RequestOutcome) string {
	switch {
	case o.Result != nil:
		return fmt.Sprintf("published run %s to %s (publish entry %d, request entry %d)", o.Run, o.To, o.Result.Seq, o.Request)
	case o.Withheld != "":
		return fmt.Sprintf("publish of run %s to %s withheld: %s; the request (entry %d) waits for a passing gate", o.Run, o.To, o.Withheld, o.Request)
	}
	return fmt.Sprintf("publish of run %s to %s (request entry %d) failed: %s", o.Run, o.To, o.Request, o.Error)
}

// ForPipeline is pipeline.Options.Gate: it gates a stage's policy with the
// training runs named by their stages resolved to the stages' runs; a dry
// run's gate records nothing. The verdict is also kept in *last when last
// is not nil.
func ForPipeline(l *ledger.Ledger, dryRun bool, last **audit.Verdict) func(ctx context.Context, policy, dir string, runs map[string]string) (bool, string, error) {
	return func(ctx context.Context, policy, dir string, runs map[string]string) (bool, string, error) {
		p, err := audit.PolicyRef(policy, dir)
		if err != nil {
			return false, "", err
		}
		r, err := Run(ctx, l, p.InPipeline(runs), audit.GateOptions{DryRun: dryRun})
		if r == nil {
			return false, "", err
		}
		if last != nil {
			*last = r.Verdict
		}
		summary := r.Summary()
		for _, o := range r.Publishes {
			summary += "; " + Describe(o)
		}
		return r.OK, summary, err
	}
}

// CheckForPipeline is pipeline.Options.CheckGate: it checks a stage's gate
// policy before anything runs: it loads, and each training run it names
// under train: is a stage of the pipeline f, or a run or a stage of the
// ledger (audit.StageRun). Its evaluations (runs:) are not checked: the
// stages' own commands name them (rlgate eval --run), so they need not
// exist yet.
func CheckForPipeline(l *ledger.Ledger, f *pipeline.File) func(ctx context.Context, policy, dir string) error {
	return func(ctx context.Context, policy, dir string) error {
		p, err := audit.PolicyRef(policy, dir)
		if err != nil {
			return err
		}
		for _, lr := range p.Subjects.Train {
			if slices.ContainsFunc(f.Stages, func(s *pipeline.Stage) bool { return s.Name == lr.Run }) {
				continue
			}
			if _, err := audit.StageRun(ctx, l, lr.Run); errors.Is(err, ledger.ErrNotFound) {
				return fmt.Errorf("train %s: %q is neither a stage of %s nor a run of the ledger. Try: name a stage of the pipeline", lr.Label, ledger.Printable(lr.Run), f.Path)
			} else if err != nil {
				return fmt.Errorf("train %s: %w", lr.Label, err)
			}
		}
		return nil
	}
}

// Policy is the policy rlgate gate decides under: the one in file, or the
// built-in paper-grade when file is empty, with the runs s names over the
// policy's own and its options as options makes them from the policy's.
// A policy that does not load, names no evaluation or is not consistent is
// a usage.Error.
func Policy(file string, s audit.Subjects, options func(audit.Options) audit.Options) (audit.Policy, error) {
	p := audit.PaperGrade()
	if file != "" {
		var err error
		if p, err = audit.LoadPolicy(file); err != nil {
			return p, usage.Errorf("--policy: %v", err)
		}
	}
	if s.Runs != nil {
		p.Subjects.Runs = s.Runs
	}
	if s.Train != nil {
		p.Subjects.Train = s.Train
	}
	if len(p.Subjects.Runs) == 0 {
		return p, usage.Errorf("gate: name the evaluations with --runs LABEL=RUN,... or in the --policy file")
	}
	p.Options = options(p.Options)
	if err := p.Check(); err != nil {
		return p, usage.Errorf("gate: %v", err)
	}
	return p, nil
}

// Decide is rlgate gate: it opens the ledger in dir (Open), gates it
// under p (Run) and, when junit names a file, writes the verdict's checks
// there as JUnit XML. A failed publish is returned beside the result, as
// Run returns it.
func Decide(ctx context.Context, dir string, p audit.Policy, dryRun bool, junit string) (*Result, error) {
	l, err := Open(ctx, dir, dryRun)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	r, err := Run(ctx, l, p, audit.GateOptions{DryRun: dryRun})
	if r == nil {
		return nil, err
	}
	if junit != "" {
		if jerr := WriteJUnitFile(junit, r.Verdict); jerr != nil {
			return nil, jerr
		}
	}
	return r, err
}

// Failure says how many of the verdict's checks failed and where it is
// recorded (nowhere in a dry run), for the command's exit status; empty
// when it passed.
func (r *Result) Failure() string {
	v := r.Verdict
	switch {
	case v.OK:
		return ""
	case v.Seq == 0:
		return fmt.Sprintf("gate: %d of %d checks failed (dry run: nothing recorded)", v.Failed, len(v.Checks))
	}
	return fmt.Sprintf("gate: %d of %d checks failed (verdict entry %d)", v.Failed, len(v.Checks), v.Seq)
}
