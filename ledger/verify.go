package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io/fs"
	"runtime"
	"sort"
	"strconv"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Finding severities: an error fails verify, a note does not.
const (
	SeverityError = "error"
	SeverityNote  = "note"
)

// Finding is one problem verify found. Seq or Digest names what it concerns.
type Finding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"` // "sqlite", "schema", "meta", "chain", "blob", "derived" or "head"
	Seq      int64  `json:"seq,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Message  string `json:"message"`
}

func (f Finding) String() string {
	where := ""
	switch {
	case f.Seq != 0:
		where = fmt.Sprintf(" entry %d:", f.Seq)
	case f.Digest != "":
		where = " " + f.Digest + ":"
	}
	return fmt.Sprintf("%s [%s]%s %s", f.Severity, f.Check, where, f.Message)
}

// VerifyReport is everything verify checked and found.
type VerifyReport struct {
	Head         Head      `json:"head"`
	Entries      int64     `json:"entries"`
	BlobsChecked int       `json:"blobs_checked"`
	BlobBytes    int64     `json:"blob_bytes"`
	Errors       int       `json:"errors"`
	Notes        int       `json:"notes"`
	Findings     []Finding `json:"findings"`
}

// OK reports whether verify found no errors (notes are allowed).
func (r *VerifyReport) OK() bool { return r.Errors == 0 }

func (r *VerifyReport) add(f Finding) {
	if f.Severity == SeverityError {
		r.Errors++
	} else {
		r.Notes++
	}
	r.Findings = append(r.Findings, f)
}

// damaged turns an error that is SQLite reporting a damaged file into a
// finding, so corruption is reported like every other; other errors (and
// cancellation) are returned, since verify cannot go on.
func (r *VerifyReport) damaged(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil || !isCorrupt(err) {
		return err
	}
	r.add(Finding{Severity: SeverityError, Check: "sqlite", Message: what + ": " + err.Error()})
	return nil
}

// isCorrupt reports whether err is SQLite saying the database file is
// damaged (SQLITE_CORRUPT, SQLITE_NOTADB).
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// VerifyOptions adjusts verify.
type VerifyOptions struct {
	// Against, when set, is a head printed earlier (in a report, say); verify
	// then also checks that this ledger still extends it, which is the only
	// way to detect a chain whose tail was cut off.
	Against *Head
}

// Verify checks the database file's integrity and schema, walks the whole
// chain, re-hashes every referenced blob and checks the derived tables
// against the entries. It reports every finding, not just the first; an
// error return means verify could not run at all, or ctx was cancelled
// (every phase stops then, mid-read or mid-query). It never writes, so it
// works on a ledger opened read-only.
func (l *Ledger) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	rep, err := l.verify(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err() // the query or read it interrupted says less
		}
		return nil, fmt.Errorf("verify %s: %w", l.dir, err)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		return rep.Findings[i].Severity == SeverityError && rep.Findings[j].Severity != SeverityError
	})
	return rep, nil
}

func (l *Ledger) verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{Findings: []Finding{}}
	if err := l.verifyIntegrity(ctx, rep); err != nil {
		return nil, err
	}
	missing, err := l.verifySchema(ctx, rep)
	if err != nil {
		if err := rep.damaged(ctx, "read the schema", err); err != nil {
			return nil, err
		}
		return rep, nil // nothing more can be read
	}
	if missing["entries"] {
		return rep, nil // nothing to walk
	}
	if err := l.verifyMeta(ctx, rep); err != nil {
		if err := rep.damaged(ctx, "read meta", err); err != nil {
			return nil, err
		}
	}
	refs := map[Digest]int64{} // blob -> first entry naming it
	// The derived tables are checked by replaying the entries, as the chain
	// walk reads them, into a scratch database with the same derivation
	// code, then comparing table by table.
	scratch, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer scratch.Close()
	scratch.SetMaxOpenConns(1)
	tx, err := scratch.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, derivedDDL); err != nil {
		return nil, err
	}
	d := newDeriver(ctx, tx, l.pg)
	err = l.verifyChain(ctx, rep, refs, func(e *Entry) {
		if err := d.apply(e, nil); err != nil && ctx.Err() == nil {
			rep.add(Finding{Severity: SeverityError, Check: "derived", Seq: e.Seq, Message: "entry cannot be derived: " + err.Error()})
		}
	})
	walked := err == nil
	if err == nil {
		err = d.flush()
	}
	d.close()
	if err != nil {
		if err := rep.damaged(ctx, "the chain walk stopped early (the derived tables are not compared)", err); err != nil {
			return nil, err
		}
	}
	if err := l.verifyBlobs(ctx, rep, refs, walked); err != nil {
		return nil, err
	}
	for _, t := range derivedTables {
		if !walked || missing[t.name] {
			continue
		}
		if err := compareTable(ctx, rep, t.name, t.order, l.db, tx); err != nil {
			if err := rep.damaged(ctx, "compare "+t.name, err); err != nil {
				return nil, fmt.Errorf("compare %s: %w", t.name, err)
			}
		}
	}
	if opts.Against != nil {
		l.verifyAgainst(ctx, rep, *opts.Against)
	}
	return rep, ctx.Err()
}

// maxIntegrityLines caps how many problems SQLite's integrity check lists.
const maxIntegrityLines = 100

// verifyIntegrity runs SQLite's own integrity check: pages it cannot read
// or that contradict each other (a corrupted byte, say) become findings.
func (l *Ledger) verifyIntegrity(ctx context.Context, rep *VerifyReport) error {
	if l.pg {
		return nil // PostgreSQL checksums its own pages, when the cluster has them on
	}
	rows, err := l.db.QueryContext(ctx, "PRAGMA integrity_check("+strconv.Itoa(maxIntegrityLines)+")")
	if err != nil {
		return rep.damaged(ctx, "integrity check", err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			rep.add(Finding{Severity: SeverityError, Check: "sqlite", Message: "integrity check: " + line})
		}
	}
	return rep.damaged(ctx, "integrity check", rows.Err())
}

// verifySchema compares the database's schema objects with the ones rlgate
// creates, made afresh in a scratch database from the same DDL: a trigger,
// view, table or index that rlgate did not create (a trigger could alter
// what is appended), or a definition that differs, is a finding. It
// returns the names of rlgate's objects that are missing.
func (l *Ledger) verifySchema(ctx context.Context, rep *VerifyReport) (map[string]bool, error) {
	if l.pg {
		return l.pgVerifySchema(ctx, rep)
	}
	want, err := rlgateSchema(ctx)
	if err != nil {
		return nil, err
	}
	have, err := readSchema(ctx, l.db)
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) {
		rep.add(Finding{Severity: SeverityError, Check: "schema", Message: fmt.Sprintf(format, args...)})
	}
	missing := map[string]bool{}
	for _, w := range want {
		h, ok := have[w.name]
		switch {
		case !ok:
			missing[w.name] = true
			bad("%s %s is missing", w.typ, w.name)
		case h != w:
			bad("%s %s is not as rlgate created it: %s", h.typ, h.name, h.sql)
		}
	}
	for _, h := range sortedSchema(have) {
		if _, ok := want[h.name]; !ok {
			bad("%s %s (on %s) was not created by rlgate: %s", h.typ, h.name, h.table, h.sql)
		}
	}
	return missing, nil
}

type schemaObject struct{ typ, name, table, sql string }

// rlgateSchema is the schema rlgate creates in every ledger.
func rlgateSchema(ctx context.Context) (map[string]schemaObject, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, coreDDL+derivedDDL); err != nil {
		return nil, err
	}
	return readSchema(ctx, db)
}

func readSchema(ctx context.Context, q queryer) (map[string]schemaObject, error) {
	rows, err := q.QueryContext(ctx, "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]schemaObject{}
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			return nil, err
		}
		out[o.name] = o
	}
	return out, rows.Err()
}

func sortedSchema(m map[string]schemaObject) []schemaObject {
	out := make([]schemaObject, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// verifyMeta checks that meta records the derived-table version this build
// writes: anything else means the derived tables were left unrebuilt (see
// upgradeDerived) or meta was edited.
func (l *Ledger) verifyMeta(ctx context.Context, rep *VerifyReport) error {
	have, err := l.meta(ctx, l.db, "derived_version")
	if err != nil {
		return err
	}
	if want := l.derivedVersion(); have != want {
		rep.add(Finding{Severity: SeverityError, Check: "meta",
			Message: fmt.Sprintf("meta derived_version is %q, this rlgate writes %s: the derived tables were not rebuilt because they disagree with the entries, or meta was edited", have, want)})
	}
	return nil
}

// verifyChain checks every link and hands each readable entry to replay.
// Rows with a seq below 1 are outside the chain (no hash links them) and
// are findings too, so every row of entries is accounted for.
func (l *Ledger) verifyChain(ctx context.Context, rep *VerifyReport, refs map[Digest]int64, replay func(*Entry)) error {
	bad := func(seq int64, format string, args ...any) {
		rep.add(Finding{Severity: SeverityError, Check: "chain", Seq: seq, Message: fmt.Sprintf(format, args...)})
	}
	outside, err := queryRaw(ctx, l.db, "WHERE seq < 1 ORDER BY seq LIMIT ?", maxRowFindings)
	if err != nil {
		return err
	}
	var nOutside int64
	if err := l.db.QueryRowContext(ctx, "SELECT count(*) FROM entries WHERE seq < 1").Scan(&nOutside); err != nil {
		return err
	}
	for _, r := range outside {
		bad(r.seq, "entry %d is outside the chain (seqs start at 1, so no hash links it): kind %q, hash %s", r.seq, r.kind, r.hash)
	}
	if n := nOutside - int64(len(outside)); n > 0 {
		bad(0, "%d more entries have a seq below 1 and are outside the chain", n)
	}
	rep.Entries += nOutside

	var last int64
	var lastHash Digest
	lastOK := true // whether lastHash can be trusted as the previous link
	for {
		page, err := queryRaw(ctx, l.db, "WHERE seq > ? ORDER BY seq LIMIT ?", last, entryPage)
		if err != nil {
			return err
		}
		for _, r := range page {
			rep.Entries++
			gap := r.seq != last+1
			if gap {
				if r.seq-1 == last+1 {
					bad(last+1, "entry is missing (the chain jumps from %d to %d)", last, r.seq)
				} else {
					bad(last+1, "entries %d to %d are missing (the chain jumps from %d to %d)", last+1, r.seq-1, last, r.seq)
				}
			}
			e, err := r.entry()
			if err != nil {
				bad(r.seq, "unreadable row: %v", err)
				last, lastOK = r.seq, false
				continue
			}
			if !gap && lastOK && e.Prev != lastHash {
				bad(e.Seq, "prev %s does not match the hash of entry %d (%s)", e.Prev, last, lastHash)
			}
			if got := computeHash(&e); got != e.Hash {
				bad(e.Seq, "content does not match its hash: kind, run, time, blobs or body were changed after it was written (stored %s, content gives %s)", e.Hash, got)
			}
			if c, err := Canonicalize(e.Body); err != nil || !bytes.Equal(c, e.Body) {
				bad(e.Seq, "body is not canonical JSON")
			}
			if e.Seq == 1 {
				l.checkGenesis(rep, &e)
			}
			for _, b := range e.Blobs {
				if _, ok := refs[b]; !ok {
					refs[b] = e.Seq
				}
			}
			replay(&e)
			last, lastHash, lastOK = e.Seq, e.Hash, true
			rep.Head = Head{LedgerID: l.id, Seq: e.Seq, Hash: e.Hash}
		}
		if len(page) < entryPage {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (l *Ledger) checkGenesis(rep *VerifyReport, e *Entry) {
	if !isGenesisOf(e, l.id) {
		rep.add(Finding{Severity: SeverityError, Check: "chain", Seq: 1,
			Message: fmt.Sprintf("the first entry is not this ledger's %s entry for ledger id %s", records.KindInit, l.id)})
	}
}

// isGenesisOf reports whether e is the first entry of ledger id: a
// ledger.init entry naming id, linked to nothing.
func isGenesisOf(e *Entry, id string) bool {
	var b InitBody
	return e.Kind == records.KindInit && decodeBody(e, &b) == nil && b.LedgerID == id && e.Prev.IsZero()
}

// verifyBlobs re-hashes every referenced blob, one file at a time per core,
// and, when refs holds every entry's blobs (walked), notes files in the
// store that no entry names. A blob file must be a regular file;
// cancelling ctx stops every worker between reads.
func (l *Ledger) verifyBlobs(ctx context.Context, rep *VerifyReport, refs map[Digest]int64, walked bool) error {
	type result struct {
		d    Digest
		size int64
		err  error
		got  Digest
	}
	ds := make([]Digest, 0, len(refs))
	for d := range refs {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool {
		return refs[ds[i]] < refs[ds[j]] || (refs[ds[i]] == refs[ds[j]] && bytes.Compare(ds[i][:], ds[j][:]) < 0)
	})
	results := make([]result, len(ds))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				res := result{d: ds[i]}
				res.got, res.size, res.err = hashBlob(ctx, l.blobs, ds[i])
				results[i] = res
			}
		}()
	}
feed:
	for i := range ds {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, res := range results {
		seq := refs[res.d]
		switch {
		case errors.Is(res.err, fs.ErrNotExist):
			rep.add(Finding{Severity: SeverityError, Check: "blob", Digest: res.d.String(), Message: fmt.Sprintf("missing (named by entry %d)", seq)})
		case res.err != nil:
			rep.add(Finding{Severity: SeverityError, Check: "blob", Digest: res.d.String(), Message: fmt.Sprintf("unreadable (named by entry %d): %v", seq, res.err)})
		case res.got != res.d:
			rep.add(Finding{Severity: SeverityError, Check: "blob", Digest: res.d.String(), Message: fmt.Sprintf("content hashes to %s (named by entry %d)", res.got, seq)})
		default:
			rep.BlobsChecked++
			rep.BlobBytes += res.size
		}
	}
	if walked {
		l.blobs.noteStray(ctx, rep, refs)
	}
	return ctx.Err()
}

// maxRowFindings caps how many differing rows one table reports in full.
const maxRowFindings = 5

func compareTable(ctx context.Context, rep *VerifyReport, table, order string, have, want queryer) error {
	q := "SELECT * FROM " + table + " ORDER BY " + order
	hr, err := have.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer hr.Close()
	wr, err := want.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer wr.Close()
	diffs := 0
	for row := 1; ; row++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hv, hok, err := nextRow(hr)
		if err != nil {
			return err
		}
		wv, wok, err := nextRow(wr)
		if err != nil {
			return err
		}
		if !hok && !wok {
			break
		}
		if hok && wok && hv == wv {
			continue
		}
		diffs++
		if diffs <= maxRowFindings {
			rep.add(Finding{Severity: SeverityError, Check: "derived",
				Message: fmt.Sprintf("table %s row %d: stored %s, the entries give %s", table, row, orNone(hv, hok), orNone(wv, wok))})
		}
	}
	if diffs > maxRowFindings {
		rep.add(Finding{Severity: SeverityError, Check: "derived", Message: fmt.Sprintf("table %s: %d more rows differ", table, diffs-maxRowFindings)})
	}
	return nil
}

func orNone(s string, ok bool) string {
	if !ok {
		return "no row"
	}
	return s
}

// nextRow renders the next row as text for comparison.
func nextRow(rows *sql.Rows) (string, bool, error) {
	if !rows.Next() {
		return "", false, rows.Err()
	}
	cols, err := rows.Columns()
	if err != nil {
		return "", false, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", false, err
	}
	return fmt.Sprintf("%v", vals), true, nil
}

func (l *Ledger) verifyAgainst(ctx context.Context, rep *VerifyReport, h Head) {
	bad := func(format string, args ...any) {
		rep.add(Finding{Severity: SeverityError, Check: "head", Seq: h.Seq, Message: fmt.Sprintf(format, args...)})
	}
	if h.LedgerID != l.id {
		bad("head %s is from ledger %s, not this ledger (%s)", h, h.LedgerID, l.id)
		return
	}
	e, err := l.EntryBySeq(ctx, h.Seq)
	if err != nil {
		bad("the ledger no longer has entry %d of head %s (it has %d entries): its tail was cut off or rewritten", h.Seq, h, rep.Head.Seq)
		return
	}
	if e.Hash != h.Hash {
		bad("entry %d now has hash %s, not %s: the ledger was rewritten since that head was printed", h.Seq, e.Hash, h.Hash)
	}
}
