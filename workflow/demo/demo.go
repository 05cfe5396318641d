// Package demo runs rlgate demo: it lays out a demo directory (the
// embedded benchmark, pipeline file and gate policy of lab/demo), runs its
// pipeline as rlgate repro does, each stage a command of the rlgate binary
// recorded in the directory's own ledger, gates it through workflow/gate,
// and reads back what the demo showed: the comparison of the four
// evaluations, the gate's verdict, the report and, when it failed, the
// checks that failed, with its text (Summary.WriteText), which rlgate demo
// (cmd/rlgate/cmd_demo.go) prints.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlgate/rlgate/audit"
	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/gate"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Options choose a demo and where it runs.
type Options struct {
	Dir    string
	Seed   int64
	Force  bool   // replace an earlier demo's files in Dir (labdemo.Prepare)
	Inject string // "" or a defect of labdemo.Injects
	// Exe is the rlgate binary the stages run as "rlgate"; empty: this one.
	Exe      string
	Progress io.Writer // one line per stage as it is decided; nil: none
}

// Summary is what a demo showed; rlgate demo --json prints it.
type Summary struct {
	Dir        string              `json:"dir"`
	Seed       int64               `json:"seed"`
	Inject     string              `json:"inject,omitempty"`
	Parts      []labdemo.Part      `json:"parts"`
	Decisions  []pipeline.Decision `json:"decisions"`
	Comparison *audit.Comparison   `json:"comparison,omitempty"`
	// Identities are the model identities the four evaluations served, by
	// label.
	Identities map[string]ledger.Digest `json:"model_identities,omitempty"`
	Verdict    *audit.Verdict           `json:"verdict,omitempty"`
	// Failed names the checks that failed: the gate's, or the pre-flight
	// check that stopped a stage.
	Failed []string `json:"failed_checks,omitempty"`
	Report string   `json:"report,omitempty"` // the HTML report
}

// CheckFailed is the error of a demo that a check stopped: the gate
// rejected the experiment, or a stage's pre-flight check refused to start
// it. It is what an injected defect must end in; rlgate exits 3 on it.
type CheckFailed struct{ msg string }

func (e *CheckFailed) Error() string { return e.msg }

// Run makes o.Dir a demo directory (labdemo.Prepare, then labdemo.Write
// for the variant), links the rlgate binary as .bin/rlgate, makes the
// ledger, and runs the pipeline (Execute). The directory's manifest
// (labdemo.Record) lists what the demo wrote once it is laid out and again
// when the demo stops, however it stops (a canceled ctx included), so that
// --force later deletes that and nothing else.
//
// The summary is nil when the demo stopped before its pipeline ran
// through; otherwise it is complete and the error, if any, says why the
// demo failed: a *CheckFailed naming the checks, or a stage that failed
// or did not run.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if o.Inject != "" && labdemo.InjectCheck(o.Inject) == "" {
		return nil, usage.Errorf("--inject %q: want leak, noupdate-drift, budget or wrong-db", o.Inject)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("demo: find the rlgate binary: %w", err)
		}
	}
	if err := labdemo.Prepare(ctx, dir, o.Force); err != nil {
		return nil, err
	}
	parts, err := labdemo.Write(dir, labdemo.Options{Seed: o.Seed, Inject: o.Inject})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// The stages find this binary first on PATH as "rlgate".
	bin := filepath.Join(dir, binDir)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	if err := os.Symlink(exe, filepath.Join(bin, "rlgate")); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	l, err := ledger.Init(ctx, filepath.Join(dir, ledger.DefaultDir))
	if err != nil {
		return nil, err
	}
	l.Close()
	if err := labdemo.Record(ctx, dir); err != nil {
		return nil, err
	}
	s, err := Execute(ctx, dir, parts, o)
	if rerr := labdemo.Record(context.WithoutCancel(ctx), dir); rerr != nil && err == nil {
		err = rerr
	}
	return s, err
}

// binDir is the demo directory's folder of the rlgate link the stages
// run.
const binDir = ".bin"

// Execute runs the pipeline of a demo directory that Run laid out, for the
// variant of o's seed and defect (o.Dir, o.Force and o.Exe are not read),
// then reads back the comparison, the verdict and the report. Run calls
// it once the directory is laid out; on a copy of a finished demo with
// another variant written over it (labdemo.Write), it runs again only the
// stages the variant changes, as rlgate repro would. parts are the
// benchmark's parts labdemo.Write returned. The summary and error are
// Run's.
func Execute(ctx context.Context, dir string, parts []labdemo.Part, o Options) (*Summary, error) {
	ldir := filepath.Join(dir, ledger.DefaultDir)
	l, err := ledger.Open(ctx, ldir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	f, err := pipeline.Load(filepath.Join(dir, labdemo.PipelineFile))
	if err != nil {
		return nil, err
	}
	s := &Summary{Dir: dir, Seed: o.Seed, Inject: o.Inject, Parts: parts, Decisions: []pipeline.Decision{}}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "rlgate demo: %s (seed %d%s): %d stages; the ledger is %s\n", dir, o.Seed, map[bool]string{true: ", --inject " + o.Inject}[o.Inject != ""], len(f.Stages), ldir)
	for _, p := range parts {
		fmt.Fprintf(progress, "rlgate demo: %-4s part: %d questions on %s\n", p.Name, p.Questions, strings.Join(p.DBs, ", "))
	}
	var verdict *audit.Verdict
	// One line per stage: its name when it starts (the line is finished
	// when it is decided), what was decided, how long it took and why.
	done, last, open := 0, time.Now(), false
	po := pipeline.Options{Gate: gate.ForPipeline(l, false, &verdict), Environ: environ(filepath.Join(dir, binDir), ldir),
		Starting: func(stage string) {
			fmt.Fprintf(progress, "rlgate demo: [%2d/%d] %-13s ", done+1, len(f.Stages), stage)
			open = true
		},
		Progress: func(d pipeline.Decision) {
			done++
			if !open {
				fmt.Fprintf(progress, "rlgate demo: [%2d/%d] %-13s ", done, len(f.Stages), d.Stage)
			}
			fmt.Fprintf(progress, "%-8s %5.1fs  %s\n", d.Action, time.Since(last).Seconds(), strings.Join(d.Reasons, "; "))
			last, open = time.Now(), false
		}}
	ds, err := pipeline.Repro(ctx, l, f, nil, po)
	if err != nil {
		return nil, err
	}
	s.Decisions = append(s.Decisions, ds...)
	s.Verdict = verdict
	if err := results(ctx, l, labdemo.Options{Seed: o.Seed, Inject: o.Inject}, s); err != nil {
		return nil, err
	}
	if verdict != nil {
		// The report of the latest verdict, which is this demo's.
		if _, err := reports.Write(ctx, l, reports.Options{}, filepath.Join(dir, labdemo.ReportDir)); err != nil {
			return nil, err
		}
		s.Report = filepath.Join(dir, labdemo.ReportDir, reports.Files[reports.FormatHTML])
	}
	return s, failure(ctx, l, s)
}

// environ is rlgate's environment with bin first on PATH and the demo's
// ledger named, so every stage's rlgate is this binary writing to this
// ledger whatever the caller's RLGATE_LEDGER says.
func environ(bin, ldir string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, ledger.EnvLedger+"=")
	})
	return append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), ledger.EnvLedger+"="+ldir)
}

// results reads what the evaluations produced: the comparison of the four
// (already recorded by the compare stage, so not recorded again) and the
// model identity each served.
func results(ctx context.Context, l *ledger.Ledger, v labdemo.Options, s *Summary) error {
	var runs []audit.LabeledRun
	for _, label := range labdemo.Labels {
		if st, err := rollout.ReadStart(ctx, l, v.EvalRun(label)); err == nil && st.ModelIdentity != nil {
			if s.Identities == nil {
				s.Identities = map[string]ledger.Digest{}
			}
			s.Identities[label] = *st.ModelIdentity
		}
		if _, err := l.RunStatus(ctx, v.GradingRun(label)); err != nil {
			return nil // an evaluation did not run: nothing to compare
		}
		runs = append(runs, audit.LabeledRun{Label: label, Run: v.GradingRun(label)})
	}
	c, err := audit.Compare(ctx, l, audit.CompareOptions{Runs: runs, Seed: 1})
	s.Comparison = c
	return err
}

// failure says why the demo failed: a failed gate or pre-flight check is
// a *CheckFailed naming the checks (and adds them to s.Failed); a stage
// that failed otherwise is an error.
func failure(ctx context.Context, l *ledger.Ledger, s *Summary) error {
	if v := s.Verdict; v != nil && !v.OK {
		for _, c := range v.Checks {
			if !c.OK {
				s.Failed = append(s.Failed, c.Name)
			}
		}
		return &CheckFailed{"demo: the gate rejected the experiment: " + v.Summary()}
	}
	for _, d := range s.Decisions {
		if d.Action != pipeline.ActionFailed {
			continue
		}
		for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindPreflight, Run: d.Run}) {
			if err != nil {
				return err
			}
			var p runner.Preflight
			if err := json.Unmarshal(e.Body, &p); err != nil {
				return fmt.Errorf("demo: entry %d: %w", e.Seq, err)
			}
			if !p.Passed {
				s.Failed = append(s.Failed, "pre-flight: "+p.FailedCheck())
				return &CheckFailed{fmt.Sprintf("demo: stage %s was not started: its pre-flight check %s failed (entry %d): %s", d.Stage, p.FailedCheck(), e.Seq, p.Reason)}
			}
		}
		return fmt.Errorf("demo: stage %s failed: %s. Try: rlgate --ledger %s log --run %s", d.Stage, strings.Join(d.Reasons, "; "),
			filepath.Join(s.Dir, ledger.DefaultDir), d.Run)
	}
	for _, d := range s.Decisions {
		if d.Action == pipeline.ActionBlocked {
			return fmt.Errorf("demo: stage %s did not run: %s", d.Stage, strings.Join(d.Reasons, "; "))
		}
	}
	if s.Verdict == nil {
		return errors.New("demo: the gate did not run")
	}
	return nil
}
