package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
)

// copyBatch is how many entries Copy appends to the destination in one
// transaction: enough that commits cost little, few enough that Ctrl-C
// loses little work and a batch's entries fit in memory.
const copyBatch = 1000

// CopyOptions adjusts Copy.
type CopyOptions struct {
	// Batch is how many entries one transaction of the destination
	// appends; 0 means 1000.
	Batch int
	// Progress, when not nil, is called with the entries copied so far and
	// the entries to copy in all: once before the first batch, then after
	// each batch commits.
	Progress func(copied, total int64)
}

// CopyResult says what Copy did. Its JSON is `rlgate ledger copy --json`.
type CopyResult struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Created   bool   `json:"created"`    // the destination was made by this copy
	Entries   int64  `json:"entries"`    // entries copied now, the first included when created
	Blobs     int    `json:"blobs"`      // blobs copied now
	BlobBytes int64  `json:"blob_bytes"` // their bytes
	Head      Head   `json:"head"`       // of both ledgers afterwards
}

// Copy makes the ledger in dir hold every entry src holds: it creates the
// ledger when dir is missing or empty (built aside and renamed into place,
// as Init does, with src's id and first entry), and otherwise appends the
// entries after dir's head, which must be an entry of src. It refuses, with
// ErrDiverged naming the first seq where they differ, a destination whose
// chain is not a prefix of src's, and one of another ledger.
//
// Entries are copied in seq order, a batch to a transaction, each batch's
// blobs first (re-hashed as they are read), so the destination never holds
// an entry without its blobs, whenever Copy stops (Ctrl-C cancels ctx); a
// later Copy goes on from there. Each entry goes through the append path
// with its own time, which links it and derives its rows as an append
// does: a copied entry whose seq or hash comes out other than the
// source's is refused (the source is damaged), so the destination's chain
// is byte for byte the source's. Copy only reads src, which may be open
// read-only.
func Copy(ctx context.Context, src *Ledger, dir string, opts CopyOptions) (*CopyResult, error) {
	batch := opts.Batch
	if batch <= 0 {
		batch = copyBatch
	}
	srcHead, err := src.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy ledger %s: %w", src.location(), err)
	}
	dst, created, err := openCopyTarget(ctx, src, dir)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	have, err := dst.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy ledger to %s: %w", dst.location(), err)
	}
	if err := checkPrefix(ctx, src, srcHead, dst, have); err != nil {
		return nil, err
	}
	res := &CopyResult{From: src.location(), To: dst.location(), Created: created, Head: have}
	if created {
		res.Entries = 1 // the first, copied by create
	}
	first, total := res.Entries, srcHead.Seq-have.Seq
	if opts.Progress != nil {
		opts.Progress(0, total)
	}
	copied := map[Digest]bool{} // blobs written by this copy
	for res.Head.Seq < srcHead.Seq {
		es, err := queryEntries(ctx, src.db, "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?", res.Head.Seq, srcHead.Seq, batch)
		if err == nil && len(es) == 0 {
			err = fmt.Errorf("entries %d to %d are missing", res.Head.Seq+1, srcHead.Seq)
		}
		if err != nil {
			return nil, copyError(src, fmt.Errorf("read entries after %d: %w", res.Head.Seq, err))
		}
		n, size, err := dst.copyBlobs(ctx, src, es, copied)
		res.Blobs, res.BlobBytes = res.Blobs+n, res.BlobBytes+size
		if err != nil {
			return nil, err
		}
		err = dst.withTx(ctx, func(tx *sql.Tx) error { return dst.copyTx(ctx, tx, res.Head.Seq, res.Head.Hash, es) })
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, copyError(src, err)
		}
		last := es[len(es)-1]
		res.Head = Head{LedgerID: src.id, Seq: last.Seq, Hash: last.Hash}
		res.Entries += int64(len(es))
		if opts.Progress != nil {
			opts.Progress(res.Entries-first, total)
		}
	}
	return res, nil
}

// copyError says what to do about a copy that stopped at err: run it again
// when the destination moved meanwhile, else look at the source.
func copyError(src *Ledger, err error) error {
	hint := "rlgate verify --ledger " + src.location() + " (the source holds what cannot be copied)"
	if errors.Is(err, ErrDiverged) {
		hint = "run the same copy again"
	}
	return &Error{Op: "copy ledger", Path: src.location(), Err: err, Hint: hint}
}

// openCopyTarget opens the ledger in dir to copy src into, or creates it,
// with src's id and first entry, when dir is missing or empty.
func openCopyTarget(ctx context.Context, src *Ledger, dir string) (*Ledger, bool, error) {
	var err error
	shown := dir
	if IsPostgres(dir) {
		if _, _, shown, _, err = pgLocation(dir, false); err != nil {
			return nil, false, err
		}
	} else if dir, err = filepath.Abs(dir); err != nil {
		return nil, false, err
	} else {
		shown = dir
	}
	refuse := func(err error, hint string) (*Ledger, bool, error) {
		return nil, false, &Error{Op: "copy ledger to", Path: shown, Err: err, Hint: hint}
	}
	if shown == src.location() {
		return refuse(errors.New("it is the source ledger itself"), "give --to another ledger")
	}
	if a, err := os.Stat(src.dir); err == nil && !src.pg && !IsPostgres(dir) {
		if b, err := os.Stat(dir); err == nil && os.SameFile(a, b) {
			return refuse(errors.New("it is the source ledger itself"), "give --to another directory")
		}
	}
	var l *Ledger
	fresh := false
	if IsPostgres(dir) {
		l, err = Open(ctx, dir)
		fresh = errors.Is(err, ErrNoLedger)
	} else if des, rerr := os.ReadDir(dir); errors.Is(rerr, os.ErrNotExist) || rerr == nil && len(des) == 0 {
		fresh = true
	} else {
		l, err = Open(ctx, dir)
	}
	if fresh {
		genesis, err := src.EntryBySeq(ctx, 1)
		if err == nil && !isGenesisOf(&genesis, src.id) {
			err = fmt.Errorf("entry 1 is not the %s entry of ledger %s", records.KindInit, src.id)
		}
		if err != nil {
			return nil, false, copyError(src, err)
		}
		l, err := create(ctx, dir, src.id, &genesis)
		return l, true, err
	}
	if errors.Is(err, ErrNoLedger) {
		return refuse(ErrNotEmpty, "give --to a new or empty directory, or an earlier copy of "+src.location())
	}
	if err != nil {
		return nil, false, err
	}
	if l.id != src.id {
		l.Close()
		return refuse(fmt.Errorf("%w: it holds ledger %s, and %s holds ledger %s", ErrDiverged, l.id, src.location(), src.id),
			"give --to a new or empty directory, or an earlier copy of "+src.location())
	}
	return l, false, nil
}

// checkPrefix checks that dst's chain, up to its head have, is src's. Equal
// hashes at have's seq mean equal chains up to there, since each entry's
// hash covers the one before it (verify checks each chain's links).
func checkPrefix(ctx context.Context, src *Ledger, srcHead Head, dst *Ledger, have Head) error {
	if have.Seq > srcHead.Seq {
		if e, err := dst.EntryBySeq(ctx, srcHead.Seq); err == nil && e.Hash == srcHead.Hash {
			return &Error{Op: "copy ledger to", Path: dst.location(),
				Err:  fmt.Errorf("%w: it extends %s (its head is entry %d, the source's %d)", ErrDestinationAhead, src.location(), have.Seq, srcHead.Seq),
				Hint: "copy the other way: rlgate ledger copy --from " + dst.location() + " --to " + src.location()}
		}
	} else if e, err := src.EntryBySeq(ctx, have.Seq); err != nil {
		return copyError(src, err)
	} else if e.Hash == have.Hash {
		return nil
	}
	seq, err := firstDifference(ctx, src, dst, min(have.Seq, srcHead.Seq))
	if err != nil {
		return fmt.Errorf("copy ledger %s to %s: compare chains: %w", src.location(), dst.location(), err)
	}
	return &Error{Op: "copy ledger to", Path: dst.location(),
		Err:  fmt.Errorf("%w at seq %d: entry %d differs between %s and %s", ErrDiverged, seq, seq, src.location(), dst.location()),
		Hint: "copy into a new or empty directory; entries are never removed from a ledger, so the two chains cannot be made one"}
}

// firstDifference returns the first seq at which a and b hold different
// entries (or only one holds one), looking no further than upTo; upTo+1 if
// they agree that far.
func firstDifference(ctx context.Context, a, b *Ledger, upTo int64) (int64, error) {
	const q = "SELECT seq, hash FROM entries WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"
	type link struct {
		seq  int64
		hash string
	}
	read := func(l *Ledger, after int64) ([]link, error) {
		rows, err := l.db.QueryContext(ctx, q, after, upTo, entryPage)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []link
		for rows.Next() {
			var r link
			if err := rows.Scan(&r.seq, &r.hash); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, rows.Err()
	}
	for after := int64(0); after < upTo; {
		pa, err := read(a, after)
		if err != nil {
			return 0, err
		}
		pb, err := read(b, after)
		if err != nil {
			return 0, err
		}
		for i := range max(len(pa), len(pb)) {
			switch {
			case i >= len(pa):
				return pb[i].seq, nil
			case i >= len(pb):
				return pa[i].seq, nil
			case pa[i].seq != pb[i].seq:
				return min(pa[i].seq, pb[i].seq), nil
			case pa[i].hash != pb[i].hash:
				return pa[i].seq, nil
			}
		}
		if len(pa) < entryPage {
			break
		}
		after = pa[len(pa)-1].seq
	}
	return upTo + 1, nil
}

// copyBlobs copies the blobs es name from src into l, on all cores, except
// those in done (copied already), which it then adds them to. It returns
// how many blobs it copied and their bytes.
func (l *Ledger) copyBlobs(ctx context.Context, src *Ledger, es []Entry, done map[Digest]bool) (int, int64, error) {
	var todo []Digest
	namedBy := map[Digest]int64{}
	for _, e := range es {
		for _, d := range e.Blobs {
			if _, ok := namedBy[d]; !ok && !done[d] {
				namedBy[d] = e.Seq
				todo = append(todo, d)
			}
		}
	}
	sizes := make([]int64, len(todo))
	err := ForEach(ctx, len(todo), func(ctx context.Context, i int) error {
		var err error
		sizes[i], err = l.copyBlob(ctx, src, todo[i], namedBy[todo[i]])
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	var total int64
	for i, d := range todo {
		done[d] = true
		total += sizes[i]
	}
	return len(todo), total, nil
}

// copyBlob copies blob d, which entry seq of src names, from src into l.
// The bytes are re-hashed on the way (OpenBlob), so a damaged source blob
// is refused rather than stored under a name it no longer has.
func (l *Ledger) copyBlob(ctx context.Context, src *Ledger, d Digest, seq int64) (int64, error) {
	r, err := src.OpenBlob(d)
	if errors.Is(err, ErrNotFound) {
		err = ErrBlobMissing
	}
	if err == nil {
		defer r.Close()
		var got Digest
		var n int64
		if got, n, err = l.PutBlob(ctxReader{ctx, r}); err == nil && got != d {
			err = fmt.Errorf("%w: copied, it hashes to %s", ErrBlobCorrupt, got)
		}
		if err == nil {
			return n, nil
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, copyError(src, fmt.Errorf("blob %s, named by entry %d: %w", d, seq, err))
}

// copyTx appends es, entries of another ledger that follow the entry
// (afterSeq, afterHash), through appendTx with their own times. It refuses
// when l's head in tx is not that entry (l changed since the copy looked)
// and when an entry comes out with another seq or hash than it has in its
// ledger.
func (l *Ledger) copyTx(ctx context.Context, tx *sql.Tx, afterSeq int64, afterHash Digest, es []Entry) error {
	seq, hash, err := headTx(ctx, tx)
	if err != nil {
		return err
	}
	if seq != afterSeq || hash != afterHash {
		return fmt.Errorf("%w: %s changed during the copy (its head is now entry %d, not %d)", ErrDiverged, l.location(), seq, afterSeq)
	}
	recs := make([]Record, len(es))
	at := make([]string, len(es))
	for i, e := range es {
		recs[i] = Record{Kind: e.Kind, Run: e.Run, Body: json.RawMessage(e.Body), Blobs: e.Blobs}
		at[i] = e.At
	}
	got, err := l.appendTx(ctx, tx, recs, at)
	if err != nil {
		return err
	}
	for i := range got {
		switch {
		case got[i].Seq != es[i].Seq:
			return fmt.Errorf("entry %d follows entry %d: the entries between are missing", es[i].Seq, got[i].Seq-1)
		case got[i].Hash != es[i].Hash:
			return fmt.Errorf("entry %d does not match its hash %s (copied, it gives %s): its content or its link to entry %d was changed after it was written",
				es[i].Seq, es[i].Hash, got[i].Hash, es[i].Seq-1)
		}
	}
	return nil
}
