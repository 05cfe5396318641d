package audit

import (
	"context"
	"fmt"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/runner"
)

// reproducedChecks are the checks of a policy's reproduced stages, one a
// stage: the stage's latest run that ended ok must have a reproduce entry
// (rlgate reproduce, docs/REPRODUCE.md) saying that every output it
// recorded was written again identical. The latest such entry for the run
// decides, so a later failed reproduction is not hidden by an earlier one;
// a reproduction of an older run of the stage does not count, as the
// stage has run again since. Read at the verdict's head, like every
// other check, so re-deriving the verdict reads the same entries.
func reproducedChecks(ctx context.Context, l *ledger.Ledger, stages []string) ([]GateCheck, error) {
	if len(stages) == 0 {
		return nil, nil
	}
	type reproduction struct {
		runner.Reproduction
		seq int64
	}
	latest := map[string]reproduction{} // by the run reproduced
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindReproduce}) {
		if err != nil {
			return nil, err
		}
		b, err := records.Decode[runner.Reproduction](e.Kind, e.Body)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Seq, err)
		}
		latest[b.Original] = reproduction{b, e.Seq}
	}
	runs, err := l.Runs(ctx)
	if err != nil {
		return nil, err
	}
	var out []GateCheck
	for _, st := range stages {
		c := GateCheck{Name: "reproduced " + st}
		run, err := stageRun(ctx, l, runs, st)
		rp, ok := latest[run]
		switch {
		case err != nil:
			c.Message = err.Error()
		case !ok:
			c.Message = fmt.Sprintf("run %s, the stage's latest that ended ok, has no reproduce entry. Try: rlgate reproduce --stage %s", run, st)
		case !rp.Reproduced:
			c.Message, c.Seqs = fmt.Sprintf("run %s did not reproduce (entry %d): %s", run, rp.seq, rp.Why()), []int64{rp.seq}
		default:
			c.OK, c.Message, c.Seqs = true, fmt.Sprintf("run %s reproduced as %s, every output identical (entry %d)", run, rp.Run, rp.seq), []int64{rp.seq}
		}
		out = append(out, c)
	}
	return out, nil
}
