// Package report writes the report of the runs a user names, by run or by
// stage (rlgate report): a run named by its stage is taken to be the
// stage's latest run that ended ok (audit.ResolveStages), recorded as
// such in the report's request, and the report is then written from the
// ledger alone (reports.Write).
package report

import (
	"context"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
)

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
