package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/gate"
	"github.com/urfave/cli/v3"
)

func newDemoCommand() *cli.Command {
	var injects []string
	for _, in := range demo.Injects {
		injects = append(injects, fmt.Sprintf("  %-15s gate must fail on %s", in.Name, in.Check))
	}
	return &cli.Command{
		Name:  "demo",
		Usage: "run the whole pipeline on an embedded benchmark with a CPU policy, then gate it",
		Description: "Unpacks the Spider dev benchmark carried in the binary into --dir, split by\n" +
			"database into sft, rl and eval parts, writes rlgate.yaml and gate.yaml\n" +
			"there, and runs the pipeline as rlgate repro does, each stage a command\n" +
			"of this same binary recorded in DIR/.rlgate: import, cold-start synthesis\n" +
			"(the Base reference policy served by rlgate serve-policy, sampled by\n" +
			"rlgate synth), SFT, RL stage 1 (GRPO), RL stage 2 (with a KL term to\n" +
			"stage 1), the No-update control (RL stage 1's recipe from its own input,\n" +
			"the SFT model, with lr = 0), evaluations of Base, SFT, RL\n" +
			"and No-update on the eval part under one protocol, every audit and the\n" +
			"gate. Then it writes the report into DIR/report and prints the\n" +
			"comparison, the gate's verdict and the report's path. Open rlgate.yaml to\n" +
			"see every command; rlgate repro in DIR runs it again.\n\n" +
			"A DIR that exists and is not empty is never touched without --force.\n" +
			"The demo lists every file it writes, with its digest, and its ledger's\n" +
			"last entry in DIR/" + demo.ManifestFile + "; --force deletes those files\n" +
			"and the ledger, and only when DIR holds nothing else: a file the list\n" +
			"lacks or that changed since, or a ledger entry added after the demo's,\n" +
			"is named and nothing is deleted.\n\n" +
			"--inject runs a deliberately broken variant that the gate must reject:\n" +
			strings.Join(injects, "\n") + "\n" +
			"(wrong-db is caught by rlgate run's pre-flight before RL stage 1 starts.)\n" +
			"It exits 3 when the gate or a pre-flight check fails.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "dir", Value: "rlgate-demo", Usage: "demo `DIR` (its own ledger is DIR/.rlgate)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "`SEED` of initialisation, sampling and training"},
			&cli.BoolFlag{Name: "force", Usage: "replace an earlier demo's files in DIR when it holds nothing else"},
			&cli.StringFlag{Name: "inject", Usage: "`DEFECT` to inject: leak, noupdate-drift, budget or wrong-db"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o := demoOptions{Dir: cmd.String("dir"), Seed: cmd.Int64("seed"), Force: cmd.Bool("force"), Inject: cmd.String("inject"), JSON: cmd.Bool("json")}
			if o.Inject != "" && demo.InjectCheck(o.Inject) == "" {
				return usagef("--inject %q: want leak, noupdate-drift, budget or wrong-db", o.Inject)
			}
			o.Progress = cmd.Root().Writer
			if o.JSON {
				o.Progress = cmd.Root().ErrWriter
			}
			_, err := runDemo(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

type demoOptions struct {
	Dir    string
	Seed   int64
	Force  bool
	Inject string
	JSON   bool
	// Exe is the rlgate binary the stages run as "rlgate"; empty: this one.
	Exe      string
	Progress io.Writer // one line per stage as it is decided; nil: none
}

// demoSummary is what rlgate demo --json prints.
type demoSummary struct {
	Dir        string              `json:"dir"`
	Seed       int64               `json:"seed"`
	Inject     string              `json:"inject,omitempty"`
	Parts      []demo.Part         `json:"parts"`
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

func runDemo(ctx context.Context, o demoOptions, w io.Writer) (*demoSummary, error) {
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
	if err := demo.Prepare(ctx, dir, o.Force); err != nil {
		return nil, err
	}
	parts, err := demo.Write(dir, demo.Options{Seed: o.Seed, Inject: o.Inject})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// The stages find this binary first on PATH as "rlgate".
	bin := filepath.Join(dir, ".bin")
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
	// The manifest lists what the demo wrote, so that --force later
	// deletes that and nothing else: once laid out, and again when the
	// demo stops, however it stops (a canceled ctx included).
	if err := demo.Record(ctx, dir); err != nil {
		return nil, err
	}
	s, err := demoExecute(ctx, dir, parts, o, w)
	if rerr := demo.Record(context.WithoutCancel(ctx), dir); rerr != nil && err == nil {
		err = rerr
	}
	return s, err
}

// demoExecute runs the pipeline of a demo directory laid out by
// demo.Write, its ledger made, then reports: the comparison, the verdict,
// the report, and the checks that failed as the error.
func demoExecute(ctx context.Context, dir string, parts []demo.Part, o demoOptions, w io.Writer) (*demoSummary, error) {
	ldir := filepath.Join(dir, ledger.DefaultDir)
	l, err := ledger.Open(ctx, ldir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	f, err := pipeline.Load(filepath.Join(dir, demo.PipelineFile))
	if err != nil {
		return nil, err
	}
	s := &demoSummary{Dir: dir, Seed: o.Seed, Inject: o.Inject, Parts: parts, Decisions: []pipeline.Decision{}}
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
	po := pipeline.Options{Gate: gate.ForPipeline(l, false, &verdict), Environ: demoEnviron(filepath.Join(dir, ".bin"), ldir),
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
	s.Decisions = append(s.Decisions, ds...)
	if err != nil {
		return s, err
	}
	s.Verdict = verdict
	if err := demoResults(ctx, l, demo.Options{Seed: o.Seed, Inject: o.Inject}, s); err != nil {
		return s, err
	}
	if verdict != nil {
		// The report of the latest verdict, which is this demo's.
		if _, err := reports.Write(ctx, l, reports.Options{}, filepath.Join(dir, demo.ReportDir)); err != nil {
			return s, err
		}
		s.Report = filepath.Join(dir, demo.ReportDir, reports.Files[reports.FormatHTML])
	}
	failure := demoFailure(ctx, l, s)
	if err := emit(w, o.JSON, s, func(w io.Writer) error { return printDemo(w, s) }); err != nil {
		return s, err
	}
	return s, failure
}

// demoEnviron is rlgate's environment with bin first on PATH and the
// demo's ledger named, so every stage's rlgate is this binary writing to
// this ledger whatever the caller's RLGATE_LEDGER says.
func demoEnviron(bin, ldir string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, ledger.EnvLedger+"=")
	})
	return append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), ledger.EnvLedger+"="+ldir)
}

// demoResults reads what the evaluations produced: the comparison of the
// four (already recorded by the compare stage, so not recorded again) and
// the model identity each served.
func demoResults(ctx context.Context, l *ledger.Ledger, v demo.Options, s *demoSummary) error {
	var runs []audit.LabeledRun
	for _, label := range demo.Labels {
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

// demoFailure says why the demo failed, as the error runDemo returns: a
// failed gate or pre-flight check is a check failure (exit 3) naming the
// checks; a stage that failed otherwise is an error.
func demoFailure(ctx context.Context, l *ledger.Ledger, s *demoSummary) error {
	if v := s.Verdict; v != nil && !v.OK {
		for _, c := range v.Checks {
			if !c.OK {
				s.Failed = append(s.Failed, c.Name)
			}
		}
		return checkFailed{"demo: the gate rejected the experiment: " + v.Summary()}
	}
	for _, d := range s.Decisions {
		if d.Action != pipeline.ActionFailed {
			continue
		}
		for e, err := range l.Entries(ctx, ledger.Filter{Kind: runner.KindPreflight, Run: d.Run}) {
			if err != nil {
				return err
			}
			var p runner.Preflight
			if err := json.Unmarshal(e.Body, &p); err != nil {
				return fmt.Errorf("demo: entry %d: %w", e.Seq, err)
			}
			if !p.Passed {
				s.Failed = append(s.Failed, "pre-flight: "+p.FailedCheck())
				return checkFailed{fmt.Sprintf("demo: stage %s was not started: its pre-flight check %s failed (entry %d): %s", d.Stage, p.FailedCheck(), e.Seq, p.Reason)}
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

func printDemo(w io.Writer, s *demoSummary) error {
	if s.Comparison != nil {
		fmt.Fprintln(w, "\nBase, SFT, RL and No-update on the eval part:")
		if err := printComparison(w, s.Comparison); err != nil {
			return err
		}
	}
	if s.Verdict != nil {
		fmt.Fprintln(w, "\nThe gate (gate.yaml):")
		if err := printVerdict(w, s.Verdict, true); err != nil {
			return err
		}
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(w, "\nFailed: %s\n", strings.Join(slices.Compact(s.Failed), ", "))
	}
	if s.Report != "" {
		fmt.Fprintf(w, "\nReport: %s\n", s.Report)
	}
	_, err := fmt.Fprintf(w, "Pipeline: %s (rlgate repro in %s runs it again)\n", filepath.Join(s.Dir, demo.PipelineFile), s.Dir)
	return err
}
