package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
)

// Actions a repro takes on a stage.
const (
	ActionSkip     = "skip"      // up to date
	ActionRan      = "ran"       // ran and succeeded
	ActionFailed   = "failed"    // ran and failed; downstream stages were not run
	ActionWouldRun = "would-run" // --dry-run: it would run
	ActionBlocked  = "blocked"   // not run: an upstream stage failed, or an input is missing
)

// Decision says what repro did with a stage and why.
type Decision struct {
	Stage   string   `json:"stage"`
	Action  string   `json:"action"`
	Reasons []string `json:"reasons"`
	Run     string   `json:"run,omitempty"` // the run executed, or the up-to-date one
	// Problems (a dry run's) are what would fail once the stage runs:
	// its command not found, an output's directory that cannot be made,
	// a gate policy that does not load or names what does not exist, an
	// input that is missing and that no stage writes.
	Problems []string `json:"problems,omitempty"`
}

// Options adjusts Repro.
type Options struct {
	DryRun         bool
	Stdout, Stderr io.Writer // the stages' output; nil: ledger only
	// Progress, if set, hears each decision as it is made.
	Progress func(Decision)
	// Starting, if set, hears a stage's name just before it runs.
	Starting func(stage string)
	// Gate checks a stage's gate policy (as the stage names it, with the
	// pipeline file's directory) once the stage ran or was up to date; it
	// reports whether the gate passed and why. runs maps each stage decided
	// so far that ran or was up to date to its run, so a policy can name a
	// training run by its stage. The gate lives above this package, so the
	// caller supplies it; a stage with a gate and no Gate here is refused.
	Gate func(ctx context.Context, policy, dir string, runs map[string]string) (ok bool, why string, err error)
	// CheckGate, if set, checks a stage's gate policy (as the stage names
	// it, with the pipeline file's directory) before any stage runs: that
	// it loads and names only what exists. Its error stops a repro before
	// anything runs, and is a problem of the stage in a dry run.
	CheckGate func(ctx context.Context, policy, dir string) error
	// Environ is the stages' environment; nil: rlgate's own. When it sets
	// PATH, a command named without a slash is looked up there.
	Environ []string
}

// Repro runs the selected stages in dependency order, skipping a stage whose
// command, params, configs and input digests equal its last successful run
// and whose outputs still have the digests that run recorded.
func Repro(ctx context.Context, l *ledger.Ledger, f *File, names []string, opts Options) ([]Decision, error) {
	stages, err := f.Select(names)
	if err != nil {
		return nil, err
	}
	last, err := lastSuccessful(ctx, l)
	if err != nil {
		return nil, err
	}
	gateProblems := map[string][]string{}
	for _, s := range stages {
		if s.Gate == "" || opts.CheckGate == nil {
			continue
		}
		if err := opts.CheckGate(ctx, s.Gate, filepath.Dir(f.Path)); err != nil {
			if !opts.DryRun {
				return nil, fmt.Errorf("pipeline %s: stage %s: gate %s: %w (nothing was run)", f.Path, s.Name, s.Gate, err)
			}
			gateProblems[s.Name] = append(gateProblems[s.Name], "gate "+s.Gate+": "+err.Error())
		}
	}
	decided := map[string]string{}
	runs := map[string]string{} // stage -> its run, for the ones that ran or were up to date
	var out []Decision
	for _, s := range stages {
		spec, err := f.spec(s)
		if err != nil {
			return out, err
		}
		d := Decision{Stage: s.Name, Reasons: []string{}}
		if opts.DryRun {
			d.Problems = append(f.problems(s, spec, opts.Environ), gateProblems[s.Name]...)
		}
		for _, u := range s.Upstream {
			switch decided[u] {
			case ActionFailed, ActionBlocked:
				d.Action = ActionBlocked
				d.Reasons = append(d.Reasons, "upstream stage "+u+" did not succeed")
			case ActionWouldRun:
				d.Action = ActionWouldRun
				d.Reasons = append(d.Reasons, "upstream stage "+u+" would run")
			}
		}
		if d.Action == "" {
			d.Reasons, err = staleness(ctx, l, spec, last[s.Name])
			if err != nil {
				return out, err
			}
			switch {
			case missingInput(spec) != "":
				d.Action = ActionBlocked
				d.Reasons = append(d.Reasons, missingInput(spec))
				if opts.DryRun {
					d.Problems = append(d.Problems, missingInput(spec))
				}
			case len(d.Reasons) == 0:
				d.Action, d.Run = ActionSkip, last[s.Name].Run
				d.Reasons = append(d.Reasons, "up to date with run "+last[s.Name].Run)
			case opts.DryRun:
				d.Action = ActionWouldRun
			default:
				spec.Stdout, spec.Stderr, spec.Environ = opts.Stdout, opts.Stderr, opts.Environ
				if err := makeOutputDirs(spec); err != nil {
					return out, err
				}
				if opts.Starting != nil {
					opts.Starting(s.Name)
				}
				res, err := runner.Execute(ctx, l, spec)
				if err != nil {
					return out, err
				}
				d.Run, d.Action = res.Run, ActionRan
				if res.Status != records.StatusOK {
					d.Action = ActionFailed
					d.Reasons = append(d.Reasons, "run "+string(res.Status)+": "+res.Reason)
				}
			}
		}
		if d.Action == ActionRan || d.Action == ActionSkip {
			runs[s.Name] = d.Run
		}
		if s.Gate != "" && len(gateProblems[s.Name]) == 0 && (d.Action == ActionRan || d.Action == ActionSkip) {
			if opts.Gate == nil {
				return out, fmt.Errorf("pipeline %s: stage %s declares gate %s, which this caller cannot check", f.Path, s.Name, s.Gate)
			}
			ok, why, err := opts.Gate(ctx, s.Gate, filepath.Dir(f.Path), maps.Clone(runs))
			if err != nil {
				return out, fmt.Errorf("stage %s: gate %s: %w", s.Name, s.Gate, err)
			}
			if !ok {
				d.Action = ActionFailed
			}
			d.Reasons = append(d.Reasons, "gate "+s.Gate+": "+why)
		}
		decided[s.Name] = d.Action
		out = append(out, d)
		if opts.Progress != nil {
			opts.Progress(d)
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// spec builds the runner spec of a stage, with paths relative to the file.
func (f *File) spec(s *Stage) (runner.Spec, error) {
	base := filepath.Dir(f.Path)
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	spec := runner.Spec{Stage: s.Name, Argv: s.Cmd, Dir: base, Params: s.Params, GPU: s.GPU != "off", Timeout: time.Duration(s.Timeout)}
	for _, k := range sortedKeys(s.Deps) {
		spec.Inputs = append(spec.Inputs, runner.Named{Name: k, Path: rel(s.Deps[k])})
	}
	for _, k := range sortedKeys(s.Outs) {
		spec.Outputs = append(spec.Outputs, runner.Named{Name: k, Path: rel(s.Outs[k])})
	}
	for _, c := range s.Configs {
		spec.Configs = append(spec.Configs, rel(c))
	}
	for _, m := range s.Metrics {
		path, format, err := metrics.ParseSpec(m)
		if err != nil {
			return spec, fmt.Errorf("stage %s: metrics %q: %w", s.Name, m, err)
		}
		spec.Metrics = append(spec.Metrics, runner.MetricFile{Path: rel(path), Format: format})
	}
	return spec, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func missingInput(spec runner.Spec) string {
	for _, in := range spec.Inputs {
		if _, err := os.Stat(in.Path); err != nil {
			return fmt.Sprintf("input %s (%s) is missing and no stage of the pipeline writes it", in.Name, in.Path)
		}
	}
	return ""
}

// pastRun is what repro needs of a stage's last successful run.
type pastRun struct {
	Run   string
	Start runner.StartBody
	End   runner.EndBody
}

// lastSuccessful reads, per stage, its most recent run that ended ok; a
// stage whose runs all failed (or are still running) has an empty pastRun,
// so that a first run and a failed one are told apart.
func lastSuccessful(ctx context.Context, l *ledger.Ledger) (map[string]*pastRun, error) {
	runs, err := l.Runs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*pastRun{}
	for _, r := range runs {
		if !r.EndedOK() {
			if out[r.Stage] == nil {
				out[r.Stage] = &pastRun{}
			}
			continue
		}
		p := &pastRun{Run: r.Run}
		for seq, into := range map[int64]any{r.StartedSeq: &p.Start, *r.EndedSeq: &p.End} {
			e, err := l.EntryBySeq(ctx, seq)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(e.Body, into); err != nil {
				return nil, fmt.Errorf("run %s: entry %d: %w", r.Run, seq, err)
			}
		}
		out[r.Stage] = p // runs come in start order: the last one wins
	}
	return out, nil
}

// staleness lists why a stage must run again; none means it is up to date.
func staleness(ctx context.Context, l *ledger.Ledger, spec runner.Spec, last *pastRun) ([]string, error) {
	switch {
	case last == nil:
		return []string{"first run"}, nil
	case last.Run == "":
		return []string{"never run successfully"}, nil
	}
	var why []string
	argv, params := runner.RecordedCommand(spec)
	if !slices.Equal(argv, last.Start.Argv) {
		why = append(why, "command changed")
	}
	for _, k := range unionKeys(params, last.Start.Params) {
		if params[k] != last.Start.Params[k] {
			why = append(why, fmt.Sprintf("param %s changed (%q -> %q)", k, last.Start.Params[k], params[k]))
		}
	}
	if len(spec.Configs) != len(last.Start.Configs) {
		why = append(why, "config files changed")
	}
	for _, c := range spec.Configs {
		d, err := runner.ConfigDigest(c)
		if err != nil {
			return nil, err
		}
		if old, ok := last.Start.Configs[runner.ConfigKey(spec.Dir, c)]; !ok || old != d {
			why = append(why, "config "+c+" changed")
		}
	}
	if len(spec.Inputs) != len(last.Start.Inputs) {
		why = append(why, "inputs changed")
	}
	for _, in := range spec.Inputs {
		if _, err := os.Stat(in.Path); err != nil {
			continue // reported as missing by the caller
		}
		dg, err := runner.DigestPath(ctx, in.Path)
		if err != nil {
			return nil, err
		}
		if old, ok := last.Start.Inputs[in.Name]; !ok || old != dg.Digest {
			why = append(why, "input "+in.Name+" changed")
		}
	}
	for _, out := range spec.Outputs {
		old, ok := last.End.Outputs[out.Name]
		if !ok {
			why = append(why, "output "+out.Name+" was not recorded")
			continue
		}
		if _, err := os.Lstat(out.Path); err != nil {
			why = append(why, "output "+out.Name+" is missing")
			continue
		}
		dg, err := runner.DigestPath(ctx, out.Path)
		if err != nil {
			return nil, err
		}
		if dg.Digest != old {
			why = append(why, "output "+out.Name+" changed since run "+last.Run)
		}
	}
	return why, nil
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
