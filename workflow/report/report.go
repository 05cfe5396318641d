// Package report writes the report of the runs a user names, by run or by
// stage (rlgate report): a run named by its stage is taken to be the
// stage's latest run that ended ok (audit.ResolveStages), recorded as
// such in the report's request, and the report is then written from the
// ledger alone (reports.Write).
package report

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/workflow/audits"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Request is the report rlgate report asks for: formats, a comma-separated
// list of md, html and json; the runs and claims of the policy file, if
// one is named, with the runs s names. A format it does not know or a
// policy that does not load is a usage.Error.
func Request(formats, policy string, s audit.Subjects) (reports.Options, error) {
	o := reports.Options{Subjects: s}
	for _, f := range strings.Split(formats, ",") {
		if f = strings.TrimSpace(f); f != "" {
			if _, ok := reports.Files[f]; !ok {
				return o, usage.Errorf("--format: %q: want md, html or json", f)
			}
			o.Formats = append(o.Formats, f)
		}
	}
	if policy != "" {
		p, err := audit.LoadPolicy(policy)
		if err != nil {
			return o, usage.Errorf("--policy: %v", err)
		}
		o.Policy = &p
	}
	return o, nil
}

// Write resolves the stage names of o's subjects and of its policy's,
// then writes the report into out. resolved, when not nil, hears each
// stage name resolved among the runs the report covers: o's subjects, and
// its policy's unless o names the evaluations itself.
func Write(ctx context.Context, l *ledger.Ledger, o reports.Options, out string, resolved func(audit.Resolution)) (*reports.Report, error) {
	if resolved == nil {
		resolved = func(audit.Resolution) {}
	}
	s, res, err := audit.ResolveStages(ctx, l, o.Subjects)
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		resolved(r)
	}
	o.Subjects = s
	if o.Policy != nil {
		p := *o.Policy
		if p.Subjects, res, err = audit.ResolveStages(ctx, l, p.Subjects); err != nil {
			return nil, err
		}
		if len(o.Subjects.Runs) == 0 {
			for _, r := range res {
				resolved(r)
			}
		}
		o.Policy = &p
	}
	return reports.Write(ctx, l, o, out)
}

// Summary is what rlgate report prints: the report written, or what the
// check found.
type Summary struct {
	Out      string               `json:"out,omitempty"`
	Files    []string             `json:"files,omitempty"`
	Headline string               `json:"headline,omitempty"`
	Head     *ledger.Head         `json:"head,omitempty"`
	Check    *reports.CheckResult `json:"check,omitempty"`
	checked  string               // the directory checked
}

// Run is rlgate report over the ledger in dir, opened read-only: with
// check, the report in that directory checked against the ledger
// (reports.Check); else the report o asks for written into out (Write),
// each stage name's resolution said on notes (nil: nowhere).
func Run(ctx context.Context, dir string, o reports.Options, out, check string, notes io.Writer) (*Summary, error) {
	if (out == "") == (check == "") {
		return nil, usage.Errorf("report: give --out DIR to write a report or --check DIR to check one")
	}
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if check != "" {
		res, err := reports.Check(ctx, l, check)
		if err != nil {
			return nil, err
		}
		return &Summary{Check: res, checked: check}, nil
	}
	r, err := Write(ctx, l, o, out, audits.Notes(notes))
	if err != nil {
		return nil, err
	}
	s := &Summary{Out: out, Headline: r.Headline, Head: &r.Head}
	for _, f := range r.Request.Formats {
		s.Files = append(s.Files, reports.Files[f])
	}
	return s, nil
}

// WriteText writes what the check found, a line per difference, or the
// report's headline and the files written.
func (s *Summary) WriteText(w io.Writer) error {
	if res := s.Check; res != nil {
		for _, d := range res.Differences {
			if _, err := fmt.Fprintln(w, d); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "report %s: %s from the ledger at head %s\n", s.checked, Differences(len(res.Differences)), res.Head)
		return err
	}
	_, err := fmt.Fprintf(w, "%s\nwrote %s into %s (ledger head %s)\n", s.Headline, strings.Join(s.Files, ", "), s.Out, *s.Head)
	return err
}

// Differences says how many differences a check found, in words.
func Differences(n int) string {
	if n == 1 {
		return "1 difference"
	}
	return fmt.Sprintf("%d differences", n)
}

// Failure says how the checked report differs from the ledger, for the
// command's exit status; empty when it matches or nothing was checked.
func (s *Summary) Failure() string {
	if s.Check == nil || s.Check.OK {
		return ""
	}
	return fmt.Sprintf("report --check: %s between %s and the ledger", Differences(len(s.Check.Differences)), s.checked)
}
