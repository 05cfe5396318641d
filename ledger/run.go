package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/rlgate/rlgate/ledger/records"
)

// locksDir holds one lock file per running run of a SQLite ledger. A
// process recording a run holds an exclusive lock on it; the kernel drops
// the lock when the process dies, however it dies, which is how a later
// open tells a run that is still going from one whose recorder was killed.
// A PostgreSQL ledger's run locks are advisory locks instead (pgLockRun).
const locksDir = "locks"

// ActiveRun is a run this process is recording: it was started with
// StartRun and holds the run's lock until End.
type ActiveRun struct {
	l      *Ledger
	ID     string
	Seq    int64 // the run.start entry
	unlock func(ended bool)
}

// StartRun takes the run's lock and appends its run.start entry. body must
// carry at least the RunStart fields; blobs are blobs the entry names.
func (l *Ledger) StartRun(ctx context.Context, run string, body any, blobs ...Digest) (*ActiveRun, error) {
	if _, err := l.RunStatus(ctx, run); err == nil {
		return nil, &Error{Op: "start run", Path: run, Err: ErrRunExists, Hint: "choose another run id (--run), or leave it out to get a fresh one"}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return l.lockAndAppend(ctx, Record{Kind: records.KindRunStart, Run: run, Body: body, Blobs: blobs})
}

// lockAndAppend takes the run's lock, then appends rec; the lock is held
// until End.
func (l *Ledger) lockAndAppend(ctx context.Context, rec Record) (*ActiveRun, error) {
	op := "start run"
	if rec.Kind == records.KindRunResume {
		op = "resume run"
	}
	unlock, err := l.lockRun(ctx, op, rec.Run)
	if err != nil {
		return nil, err
	}
	es, err := l.Append(ctx, rec)
	if err != nil {
		unlock(true)
		return nil, fmt.Errorf("%s %q: %w", op, rec.Run, err)
	}
	return &ActiveRun{l: l, ID: rec.Run, Seq: es[0].Seq, unlock: unlock}, nil
}

// lockRun takes the lock a process holds while it records run: a lock
// file under locksDir, or in PostgreSQL the run's advisory lock, which
// every host sees. It fails when another process holds it. The returned
// func releases it; ended says the run is over, and its lock file goes.
func (l *Ledger) lockRun(ctx context.Context, op, run string) (func(ended bool), error) {
	if l.pg {
		release, ok, err := l.pgLockRun(ctx, run)
		switch {
		case err != nil:
			if lost, ok := l.pgConnLost(op+" "+run+": lock it in", err); ok {
				return nil, lost
			}
			return nil, fmt.Errorf("%s %q: lock it in %s: %w", op, run, l.shown, err)
		case !ok:
			return nil, &Error{Op: op, Path: run, Err: ErrRunLocked,
				Hint: "wait for it or stop it (the lock is the PostgreSQL server's: the process may be on another host)"}
		}
		return func(bool) { release() }, nil
	}
	if err := os.MkdirAll(filepath.Join(l.dir, locksDir), 0o755); err != nil {
		return nil, fmt.Errorf("%s %q: %w", op, run, err)
	}
	f, err := lockFile(l.lockPath(run))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", op, run, err)
	}
	return func(ended bool) { unlockFile(f, ended) }, nil
}

// tryLockRun takes the lock of a run marked running, for
// recoverInterrupted: ok is false when a live process holds it, and, in a
// SQLite ledger, when no process of this host ever recorded the run (no
// lock file). In PostgreSQL every host's recorders hold the same locks, so
// a free lock means the recorder died, wherever it ran.
func (l *Ledger) tryLockRun(ctx context.Context, run string) (unlock func(ended bool), ok bool, err error) {
	if l.pg {
		release, ok, err := l.pgLockRun(ctx, run)
		if !ok {
			return nil, false, err
		}
		return func(bool) { release() }, true, nil
	}
	path := l.lockPath(run)
	if _, err := os.Stat(path); err != nil {
		return nil, false, nil // not recorded by a lock-holding process here; leave it
	}
	f, err := tryLockFile(path)
	if err != nil {
		return nil, false, nil // still held: the run is alive
	}
	return func(ended bool) { unlockFile(f, ended) }, true, nil
}

// ResumeRun reopens a run whose recorder was interrupted or failed, so a
// command such as a rollout can continue it under the same id: it takes
// the run's lock and appends a run.resume entry. A run that ended ok, or
// that another process is recording, is refused.
func (l *Ledger) ResumeRun(ctx context.Context, run string, body any) (*ActiveRun, error) {
	r, err := l.RunStatus(ctx, run)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, &Error{Op: "resume run", Path: run, Err: ErrNotFound, Hint: "start it first"}
	case err != nil:
		return nil, err
	case r.Status == records.StatusOK:
		return nil, &Error{Op: "resume run", Path: run, Err: ErrRunExists, Hint: "it finished; choose another run id to run again"}
	case r.Status == records.StatusRunning:
		return nil, &Error{Op: "resume run", Path: run, Err: ErrRunExists, Hint: "another process is recording it; wait for it or stop it"}
	}
	return l.lockAndAppend(ctx, Record{Kind: records.KindRunResume, Run: run, Body: body})
}

// RunStatus returns a run's row, or ErrNotFound.
func (l *Ledger) RunStatus(ctx context.Context, run string) (Run, error) {
	runs, err := l.queryRuns(ctx, "WHERE run = ?", run)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("run %q: %w", run, ErrNotFound)
	}
	return runs[0], nil
}

// End appends the run.end entry (body must carry the RunEnd fields) and
// releases the run's lock.
func (r *ActiveRun) End(ctx context.Context, body any, blobs ...Digest) (Entry, error) {
	return r.end(ctx, nil, Record{Kind: records.KindRunEnd, Run: r.ID, Body: body, Blobs: blobs})
}

// EndWith appends recs and then the run.end entry (body, as for End) in one
// transaction, and releases the run's lock: a command whose records are
// all ready when it ends (a grading's input and outcomes) commits them
// once, one fsync instead of one per Append, and the run's results and
// its end are recorded together or not at all.
func (r *ActiveRun) EndWith(ctx context.Context, recs []Record, body any) (Entry, error) {
	return r.end(ctx, recs, Record{Kind: records.KindRunEnd, Run: r.ID, Body: body})
}

func (r *ActiveRun) end(ctx context.Context, recs []Record, end Record) (Entry, error) {
	es, err := r.l.Append(ctx, append(slices.Clip(recs), end)...)
	if err != nil {
		return Entry{}, fmt.Errorf("end run %q: %w", r.ID, err)
	}
	r.unlock(true)
	return es[len(es)-1], nil
}

// FailedBody is the run.end body Fail writes.
type FailedBody struct {
	RunEnd
	Reason string `json:"reason"`
}

// Fail ends the run as failed with cause's text as its reason: a command
// that hits an error after starting its run closes it so, and the run is
// not later taken for one whose recorder was killed.
func (r *ActiveRun) Fail(ctx context.Context, cause error) (Entry, error) {
	return r.End(ctx, FailedBody{RunEnd: RunEnd{Status: records.StatusFailed}, Reason: cause.Error()})
}

func (l *Ledger) lockPath(run string) string {
	return filepath.Join(l.dir, locksDir, Sum([]byte(run)).Hex()[:32]+".lock")
}

// InterruptedBody is the run.end body written for a run whose recorder died.
type InterruptedBody struct {
	RunEnd
	Reason string `json:"reason"`
}

// recoverInterrupted closes every run that is still marked running but
// whose lock nobody holds (see tryLockRun): its recorder was killed or
// crashed. What it logged before dying stays in the ledger. It runs at
// every open, so it reads only the running runs, not the whole table.
func (l *Ledger) recoverInterrupted(ctx context.Context) error {
	runs, err := l.queryRuns(ctx, "WHERE status = ? ORDER BY started_seq", string(records.StatusRunning))
	if err != nil {
		return err
	}
	for _, r := range runs {
		unlock, ok, err := l.tryLockRun(ctx, r.Run)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := l.closeInterrupted(ctx, r.Run); err != nil {
			unlock(false)
			return err
		}
		unlock(true)
	}
	return nil
}

func (l *Ledger) closeInterrupted(ctx context.Context, run string) error {
	r, err := l.RunStatus(ctx, run)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil || r.Status != records.StatusRunning: // re-checked under the lock
		return err
	}
	_, err = l.Append(ctx, Record{Kind: records.KindRunEnd, Run: run, Body: InterruptedBody{
		RunEnd: RunEnd{Status: records.StatusInterrupted},
		Reason: "the process recording this run ended without closing it (killed or crashed)",
	}})
	return err
}
