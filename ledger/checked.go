package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// Checked returns a read-only view of the ledger as of entry at (0: its
// head) that decisions read instead of the ledger itself. Every entry up to
// at is read once, re-hashed, checked against its link to the entry before
// it (and the first against this ledger's id), and copied into a private
// database whose derived tables are rebuilt from those entries alone. So a
// row that someone edited in the ledger's own tables (an outcome set to
// correct, a run's status set to ok, a body or hash column rewritten)
// cannot reach a gate, a report or a publish: either the entries disagree
// with their hashes, and Checked refuses naming the first such seq
// (ErrTampered), or the derived rows come from the entries and not from
// the tables that were edited.
//
// The view shares the ledger's blob store (every blob read is re-hashed)
// and refuses appends. Close removes its private database.
func (l *Ledger) Checked(ctx context.Context, at int64) (*Ledger, error) {
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	if at == 0 {
		at = head.Seq
	}
	if at < 1 || at > head.Seq {
		return nil, fmt.Errorf("read ledger %s as of entry %d: %w: its head is entry %d", l.location(), at, ErrNotFound, head.Seq)
	}
	scratch, err := os.MkdirTemp("", "rlgate-checked-")
	if err != nil {
		return nil, fmt.Errorf("read ledger %s: a private copy to check it in: %w. Try: set TMPDIR to a writable directory", l.location(), err)
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(scratch, dbName), "scratch"))
	if err == nil {
		err = l.copyChecked(ctx, db, at)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		os.RemoveAll(scratch)
		return nil, err
	}
	return &Ledger{dir: l.dir, db: db, id: l.id, scratch: scratch, shown: l.location(), blobs: l.blobs, view: true}, nil
}

// copyChecked fills db, a new database, with the entries 1..at of l, each
// checked as Checked says, and derives its tables from them.
func (l *Ledger) copyChecked(ctx context.Context, db *sql.DB, at int64) error {
	if _, err := db.ExecContext(ctx, coreDDL+derivedDDL); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES ('ledger_id', ?)", l.id); err != nil {
		return err
	}
	d := newDeriver(ctx, tx)
	defer d.close()
	var last int64
	var lastHash Digest
	for last < at {
		page, err := queryRaw(ctx, l.db, "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?", last, at, entryPage)
		if err != nil {
			return fmt.Errorf("read ledger %s: %w", l.location(), err)
		}
		if len(page) == 0 {
			return l.tampered(last+1, "is missing (the chain ends at entry %d)", last)
		}
		entries := make([]Entry, len(page))
		for i, r := range page {
			e, err := r.entry()
			if err != nil {
				return l.tampered(r.seq, "is unreadable: %v", err)
			}
			if err := l.checkLink(&e, last, lastHash); err != nil {
				return err
			}
			entries[i] = e
			last, lastHash = e.Seq, e.Hash
		}
		for start := 0; start < len(entries); start += insertChunk {
			chunk := entries[start:min(start+insertChunk, len(entries))]
			args := make([]any, 0, 8*len(chunk))
			for i := range chunk {
				e := &chunk[i]
				args = append(args, e.Seq, e.Prev.Hex(), e.Hash.Hex(), e.Kind, e.Run, e.At, joinDigests(e.Blobs), string(e.Body))
			}
			if _, err := d.exec(insertEntries(len(chunk)), args...); err != nil {
				return err
			}
		}
		for i := range entries {
			if err := d.apply(&entries[i], nil); err != nil {
				return l.tampered(entries[i].Seq, "cannot be read (%s): %v", entries[i].Kind, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := d.flush(); err != nil {
		return err
	}
	return tx.Commit()
}

// checkLink checks that e is the entry after (seq, hash): the next seq,
// linked to that hash, hashing to its own hash, and, first of all, this
// ledger's genesis entry.
func (l *Ledger) checkLink(e *Entry, seq int64, hash Digest) error {
	switch {
	case e.Seq != seq+1:
		return l.tampered(seq+1, "is missing (the chain jumps from entry %d to %d)", seq, e.Seq)
	case e.Prev != hash:
		return l.tampered(e.Seq, "is not linked to entry %d: its prev is %s, entry %d hashes to %s", seq, e.Prev, seq, hash)
	case computeHash(e) != e.Hash:
		return l.tampered(e.Seq, "does not match its hash: its kind, run, time, blobs or body were changed after it was written")
	case e.Seq == 1 && !isGenesisOf(e, l.id):
		return l.tampered(1, "is not this ledger's %s entry for ledger id %s", KindInit, l.id)
	}
	// Whether the body is canonical JSON is left to verify: whoever can
	// write a body that hashes right can write a canonical one as well, so
	// checking it here would cost time and stop nobody.
	return nil
}

// tampered is the error for an entry that fails its checks.
func (l *Ledger) tampered(seq int64, format string, args ...any) error {
	return &TamperedError{Seq: seq, Ledger: l.location(), Why: fmt.Sprintf(format, args...)}
}

// TamperedError says which entry of a ledger failed the checks a decision
// makes before it reads anything (see Checked). It wraps ErrTampered.
type TamperedError struct {
	Seq    int64
	Ledger string
	Why    string
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("entry %d of ledger %s %s. Nothing was decided. Try: rlgate verify --ledger %s", e.Seq, e.Ledger, e.Why, e.Ledger)
}

func (e *TamperedError) Unwrap() error { return ErrTampered }
