// Package audits runs the audits and the paired comparison a command names
// against a ledger and records their results: a ledger audit (rlgate audit
// gold, split, ...), the weights audit (rlgate audit weights) and a
// comparison of evaluation runs (rlgate compare); it also writes each
// result's text, which the demo shares for its comparison.
package audits

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stats"
	"github.com/rlgate/rlgate/workflow/textout"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Notes says on w, a line apiece, which run a stage name was taken to be;
// a nil w hears nothing.
func Notes(w io.Writer) func(audit.Resolution) {
	if w == nil {
		w = io.Discard
	}
	return func(r audit.Resolution) { fmt.Fprintln(w, "rlgate:", ledger.Printable(r.String())) }
}

// Ledger runs the ledger audit name over s in the ledger in dir, with the
// runs s names by their stages resolved first (each resolution said on
// notes), and records the report.
func Ledger(ctx context.Context, dir, name string, s audit.Subjects, o audit.Options, notes io.Writer) (*audit.Report, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	s, res, err := audit.ResolveStages(ctx, l, s)
	if err != nil {
		return nil, err
	}
	note := Notes(notes)
	for _, r := range res {
		note(r)
	}
	r, err := audit.Audit(ctx, l, name, s, o)
	if err != nil {
		return nil, err
	}
	return r, r.Record(ctx, l)
}

// Weights runs the weights audit o and records its report in the ledger
// in dir, which is opened first: hashing can take minutes, and a ledger
// that cannot be written should say so before.
func Weights(ctx context.Context, dir string, o audit.WeightsOptions) (*audit.WeightsReport, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	r, err := audit.AuditWeights(ctx, o)
	if err != nil {
		return nil, err
	}
	return r, r.Record(ctx, l)
}

// Compare compares the evaluation runs o names in the ledger in dir and
// records the comparison. Fewer than two runs, or a baseline that is not
// one of their labels, is a usage.Error.
func Compare(ctx context.Context, dir string, o audit.CompareOptions) (*audit.Comparison, error) {
	if len(o.Runs) < 2 {
		return nil, usage.Errorf("--runs: give at least two LABEL=RUN pairs")
	}
	if err := usage.First(usage.Alpha(o.Alpha), usage.Count("resamples", o.B, stats.MinResamples, math.MaxInt)); err != nil {
		return nil, err
	}
	if b := o.Baseline; b != "" && !slices.ContainsFunc(o.Runs, func(r audit.LabeledRun) bool { return r.Label == b }) {
		return nil, usage.Errorf("--baseline %q: want one of the labels in --runs", b)
	}
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	c, err := audit.Compare(ctx, l, o)
	if err != nil {
		return nil, err
	}
	return c, c.Record(ctx, l)
}

// WriteReport writes a ledger audit's checks with their evidence and its
// verdict.
func WriteReport(w io.Writer, r *audit.Report) error {
	t := textout.NewTable(w, "check", "result", "evidence", "finding")
	for _, f := range r.Findings {
		t.Append(f.Check, textout.PassFail(f.OK), textout.Seqs(f.Seqs), f.Message)
	}
	if err := t.Render(); err != nil {
		return err
	}
	verdict := "passed"
	if !r.OK {
		verdict = fmt.Sprintf("failed %d of %d checks", r.Failed, len(r.Findings))
	}
	_, err := fmt.Fprintf(w, "%s audit %s; recorded as entry %d\n", r.Audit, verdict, r.Seq)
	return err
}

// Failure says how many of a ledger audit's checks failed and where it is
// recorded, for the command's exit status; empty when it passed.
func Failure(r *audit.Report) string {
	if r.OK {
		return ""
	}
	return fmt.Sprintf("audit %s: %d of %d checks failed (entry %d)", r.Audit, r.Failed, len(r.Findings), r.Seq)
}

// WeightsFailure is Failure for the weights audit.
func WeightsFailure(r *audit.WeightsReport) string {
	if r.OK {
		return ""
	}
	return fmt.Sprintf("audit weights: %d of %d checks failed (entry %d)", r.Failed, len(r.Findings), r.Seq)
}

// WriteWeights writes the weights audit's checkpoints, its findings (with
// the most changed tensors where a finding has them) and its verdict.
func WriteWeights(w io.Writer, r *audit.WeightsReport) error {
	t := textout.NewTable(w, "checkpoint", "model identity", "tensors", "bytes", "path")
	for _, c := range []struct {
		role string
		c    *audit.WeightsCheckpoint
	}{{"base", &r.Base}, {"trained", &r.Trained}, {"noupdate", r.NoUpdate}} {
		if c.c != nil {
			t.Append(c.role, c.c.Identity.String(), fmt.Sprint(c.c.Tensors), fmt.Sprint(c.c.Size), c.c.Path)
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%s %s: %s\n", textout.PassFail(f.OK), f.Check, ledger.Printable(f.Message))
		if ev, ok := f.Evidence.(audit.ChangeEvidence); ok && len(ev.Top) > 0 {
			t := textout.NewTable(w, "most changed tensor", "changed", "max |Δ|", "‖Δ‖/‖A‖")
			for _, d := range ev.Top {
				t.Append(d.Name, fmt.Sprintf("%d of %d", d.Changed, d.Elements), fmt.Sprintf("%.4g", d.MaxAbsDelta), audit.FormatRelChange(d.RelL2Delta))
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
	}
	verdict := "passed"
	if !r.OK {
		verdict = fmt.Sprintf("failed %d of %d checks", r.Failed, len(r.Findings))
	}
	_, err := fmt.Fprintf(w, "weights audit %s; recorded as entry %d\n", verdict, r.Seq)
	return err
}

// WriteComparison writes each run's accuracy, each pair against the
// baseline, the breakdown by difficulty and where the comparison was
// recorded.
func WriteComparison(w io.Writer, c *audit.Comparison) error {
	level := fmt.Sprintf("%g%%", 100*(1-c.Alpha))
	t := textout.NewTable(w, "model", "run", "correct", "accuracy", "Wilson "+level+" CI")
	for _, m := range c.Models {
		t.Append(m.Label, m.Run, fmt.Sprintf("%d/%d", m.Correct, m.N), fmt.Sprintf("%.4f", m.Accuracy), fmt.Sprintf("[%.4f, %.4f]", m.Wilson.Lo, m.Wilson.Hi))
	}
	if err := t.Render(); err != nil {
		return err
	}
	t = textout.NewTable(w, "comparison", "Δ accuracy", "bootstrap "+level+" CI", "b", "c", "McNemar exact p", "Holm p", fmt.Sprintf("MDE (%g%% power)", 100*c.Power))
	for _, p := range c.Pairs {
		t.Append(p.Label+" vs "+p.Baseline, fmt.Sprintf("%+.4f", p.Delta),
			fmt.Sprintf("[%+.4f, %+.4f]", p.Bootstrap.Percentile.Lo, p.Bootstrap.Percentile.Hi),
			fmt.Sprint(p.B), fmt.Sprint(p.C), fmt.Sprintf("%.4g", p.McNemar.ExactP), fmt.Sprintf("%.4g", p.HolmP), fmt.Sprintf("%.4f", p.MDE))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := writeByDifficulty(w, c); err != nil {
		return err
	}
	recorded := fmt.Sprintf("recorded as entry %d", c.Seq)
	if c.Seq == 0 {
		recorded = "not recorded" // rlgate demo shows what its compare stage recorded
	}
	_, err := fmt.Fprintf(w, "%d paired tasks (task set %s); bootstrap B=%d, seed %d; %s\n", c.Tasks, c.TaskSet, c.B, c.Seed, recorded)
	return err
}

// writeByDifficulty writes the comparison's breakdown by difficulty
// level, one row per level: tasks, each run's correct count, and b, c and
// Δ of each run against the baseline.
func writeByDifficulty(w io.Writer, c *audit.Comparison) error {
	if len(c.ByDifficulty) == 0 {
		return nil
	}
	head := []any{"difficulty", "tasks"}
	for _, m := range c.Models {
		head = append(head, m.Label+" correct")
	}
	for _, p := range c.Pairs {
		head = append(head, p.Label+" b", p.Label+" c", p.Label+" Δ")
	}
	if _, err := fmt.Fprintf(w, "by difficulty (b, c and Δ against %s):\n", c.Baseline); err != nil {
		return err
	}
	t := textout.NewTable(w, head...)
	for _, d := range c.ByDifficulty {
		row := []any{d.Difficulty, d.Tasks}
		for _, m := range c.Models {
			row = append(row, d.Correct[m.Label])
		}
		for _, p := range d.Pairs {
			row = append(row, p.B, p.C, fmt.Sprintf("%+.4f", p.Delta))
		}
		t.Append(row...)
	}
	return t.Render()
}
