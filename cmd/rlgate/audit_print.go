// The tables the ledger audits and the weights audit print, and the
// result and evidence cells every table of checks shares.

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
)

func printWeights(w io.Writer, r *audit.WeightsReport) error {
	t := newTable(w, "checkpoint", "model identity", "tensors", "bytes", "path")
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
		verdict := "PASS"
		if !f.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", verdict, f.Check, ledger.Printable(f.Message))
		if ev, ok := f.Evidence.(audit.ChangeEvidence); ok && len(ev.Top) > 0 {
			t := newTable(w, "most changed tensor", "changed", "max |Δ|", "‖Δ‖/‖A‖")
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

func printAuditReport(w io.Writer, r *audit.Report) error {
	t := newTable(w, "check", "result", "evidence", "finding")
	for _, f := range r.Findings {
		t.Append(f.Check, passFail(f.OK), formatSeqs(f.Seqs), f.Message)
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

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// formatSeqs prints evidence seqs as "#12 #40", at most 8 of them.
func formatSeqs(seqs []int64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i == 8 {
			fmt.Fprintf(&b, " +%d more", len(seqs)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "#%d", s)
	}
	return b.String()
}
