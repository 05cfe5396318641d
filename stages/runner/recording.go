package runner

import (
	"context"
	"fmt"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// Recording is what the ledger holds of one stage that rlgate run (or
// repro) executed: its run.start and run.end bodies and its artifact
// entries, which is all a reproduction needs to run it again.
type Recording struct {
	Run       ledger.Run
	Start     StartBody
	End       EndBody
	Artifacts []ArtifactBody // in ledger order
}

// ReadRecording reads run's recording. A run that has not ended, or that
// no rlgate run executed (an imported run, a rollout, a grading, a
// synthesis), is refused by name, since there is no command to run again.
func ReadRecording(ctx context.Context, l *ledger.Ledger, run string) (*Recording, error) {
	r, err := l.RunStatus(ctx, run)
	if err != nil {
		return nil, err
	}
	if r.EndedSeq == nil {
		return nil, fmt.Errorf("run %s is %s, not ended. Try: wait for it to end", run, r.Status)
	}
	rec := &Recording{Run: r}
	if rec.Start, err = ledger.DecodeEntry[StartBody](ctx, l, r.StartedSeq); err != nil {
		return nil, fmt.Errorf("run %s: %w", run, err)
	}
	if rec.End, err = ledger.DecodeEntry[EndBody](ctx, l, *r.EndedSeq); err != nil {
		return nil, fmt.Errorf("run %s: %w", run, err)
	}
	if len(rec.Start.Argv) == 0 {
		return nil, fmt.Errorf("run %s (stage %s) recorded no command: rlgate run did not execute it (an imported run, a synthesis or an export has none to run again). Try: the stage that ran it", run, r.Stage)
	}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindArtifact, Run: run}) {
		if err != nil {
			return nil, err
		}
		a, err := records.Decode[ArtifactBody](e.Kind, e.Body)
		if err != nil {
			return nil, fmt.Errorf("run %s: entry %d: %w", run, e.Seq, err)
		}
		rec.Artifacts = append(rec.Artifacts, a)
	}
	return rec, nil
}
