package gate

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/workflow/textout"
)

// WriteText writes every check of the verdict, then a line per publish
// request the gate acted on (rlgate gate).
func (r *Result) WriteText(w io.Writer) error {
	if err := WriteVerdict(w, r.Verdict, false); err != nil {
		return err
	}
	for _, oc := range r.Publishes {
		fmt.Fprintln(w, "rlgate:", Describe(oc))
	}
	return nil
}

// WriteJUnitFile writes v's checks as JUnit XML to path, for CI systems.
func WriteJUnitFile(path string, v *audit.Verdict) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if err := v.WriteJUnit(f); err != nil {
		f.Close()
		return fmt.Errorf("write junit %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write junit %s: %w", path, err)
	}
	return nil
}

// checkResult is a check's result column. A claim holds only when the
// whole gate passes, so under a failed gate no claim reads PASS: one whose
// test passed "would pass", the others are "not supported".
func checkResult(v *audit.Verdict, c audit.GateCheck) string {
	switch {
	case v.OK || !strings.HasPrefix(c.Name, "claim "):
		return textout.PassFail(c.OK)
	case c.OK:
		return "would pass"
	}
	return "not supported"
}

// BriefFindings is how many failed findings of one check a brief verdict
// shows; a leak can fail one check once per task.
const BriefFindings = 3

// WriteVerdict writes every check of v, or with brief only its claims and
// the first findings of each check that failed (the demo's summary: the
// report lists them all), then the verdict's line.
func WriteVerdict(w io.Writer, v *audit.Verdict, brief bool) error {
	for _, r := range v.Resolved {
		fmt.Fprintln(w, "rlgate:", ledger.Printable(r.String()))
	}
	t := textout.NewTable(w, "check", "result", "evidence", "finding")
	passed, failed := 0, map[string]int{}
	for _, c := range v.Checks {
		switch {
		case !brief || strings.HasPrefix(c.Name, "claim "):
		case c.OK:
			passed++
			continue
		default:
			if failed[c.Name]++; failed[c.Name] > BriefFindings {
				continue
			}
		}
		t.Append(c.Name, checkResult(v, c), textout.Seqs(c.Seqs), c.Message)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		if n := failed[name]; n > BriefFindings {
			fmt.Fprintf(w, "and %d more findings of %s\n", n-BriefFindings, ledger.Printable(name))
		}
	}
	if passed > 0 {
		fmt.Fprintf(w, "and %d audit checks passed (the report lists every check with its evidence)\n", passed)
	}
	verdict := "PASSED"
	if !v.OK {
		verdict = fmt.Sprintf("FAILED %d of %d checks", v.Failed, len(v.Checks))
	}
	model := "no model identity recorded"
	if v.ModelIdentity != nil {
		model = "model " + v.ModelIdentity.String()
	}
	entry := fmt.Sprintf("verdict entry %d", v.Seq)
	if v.Seq == 0 {
		entry = "dry run, nothing recorded,"
	}
	_, err := fmt.Fprintf(w, "gate %s (%s); %s for %s at ledger head %s\n", verdict, ledger.Printable(reports.PolicyStatement(v.Policy)), entry, model, v.Head)
	return err
}
