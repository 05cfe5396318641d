package audit

import (
	"context"
	"fmt"
	"slices"

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
			why, err := unbacked(ctx, l, runs, run, rp.Reproduction)
			if err != nil {
				return nil, err
			}
			if why != "" {
				c.Message, c.Seqs = fmt.Sprintf("run %s: reproduce entry %d says it reproduced, but %s", run, rp.seq, why), []int64{rp.seq}
				break
			}
			c.OK, c.Message, c.Seqs = true, fmt.Sprintf("run %s reproduced as %s, every output identical (entry %d)", run, rp.Run, rp.seq), []int64{rp.seq}
		}
		out = append(out, c)
	}
	return out, nil
}

// unbacked says what of a reproduce entry's claim the runs it names do not
// bear out ("" when they do): an entry is only a claim, so the gate holds
// it to the runs' own hash-checked records. The reproduction must be a run
// of this ledger, of stage reproduce.STAGE, that ended ok; and each output
// it calls identical by its bytes must be, by name, an output of both runs
// with the digests the entry gives.
func unbacked(ctx context.Context, l *ledger.Ledger, runs []ledger.Run, original string, rp runner.Reproduction) (string, error) {
	i := slices.IndexFunc(runs, func(r ledger.Run) bool { return r.Run == rp.Run })
	switch {
	case i < 0:
		return fmt.Sprintf("its run %q is not in the ledger", rp.Run), nil
	case runs[i].Stage != "reproduce."+rp.Stage || !runs[i].EndedOK():
		return fmt.Sprintf("its run %s is of stage %s and %s, not a reproduction of stage %s that ended ok", rp.Run, runs[i].Stage, runs[i].Status, rp.Stage), nil
	}
	was, err := outputDigests(ctx, l, original)
	if err != nil {
		return "", err
	}
	now, err := outputDigests(ctx, l, rp.Run)
	if err != nil {
		return "", err
	}
	for _, o := range rp.Outputs {
		if o.Relocated || o.As != "" || o.Recorded == nil || o.Reproduced == nil {
			continue // compared otherwise than by the bytes' digest
		}
		if *o.Recorded != *o.Reproduced || was[o.Name] != *o.Recorded || now[o.Name] != *o.Reproduced {
			return fmt.Sprintf("output %s is %s in run %s and %s in run %s", o.Name, was[o.Name], original, now[o.Name], rp.Run), nil
		}
	}
	return "", nil
}

// outputDigests are the digests of what run recorded as its outputs and
// checkpoints, by name (the last recorded, for a name given twice).
func outputDigests(ctx context.Context, l *ledger.Ledger, run string) (map[string]ledger.Digest, error) {
	out := map[string]ledger.Digest{}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindArtifact, Run: run}) {
		if err != nil {
			return nil, err
		}
		a, err := records.Decode[runner.ArtifactBody](e.Kind, e.Body)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Seq, err)
		}
		if a.Role == records.RoleOutput || a.Role == records.RoleCheckpoint {
			out[a.Name] = a.Digest
		}
	}
	return out, nil
}
