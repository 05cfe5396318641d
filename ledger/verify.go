package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
)

// Finding severities: an error fails verify, a note does not.
const (
	SeverityError = "error"
	SeverityNote  = "note"
)

// Finding is one problem verify found. Seq or Digest names what it concerns.
type Finding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"` // "chain", "blob", "derived" or "head"
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

// VerifyOptions adjusts verify.
type VerifyOptions struct {
	// Against, when set, is a head printed earlier (in a report, say); verify
	// then also checks that this ledger still extends it, which is the only
	// way to detect a chain whose tail was cut off.
	Against *Head
}

// Verify walks the whole chain, re-hashes every referenced blob and checks
// the derived tables against the entries. It reports every finding, not
// just the first; an error return means verify could not run at all.
func (l *Ledger) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{Findings: []Finding{}}
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
	d := newDeriver(ctx, tx)
	err = l.verifyChain(ctx, rep, refs, func(e *Entry) {
		if err := d.apply(e, nil); err != nil {
			rep.add(Finding{Severity: SeverityError, Check: "derived", Seq: e.Seq, Message: "entry cannot be derived: " + err.Error()})
		}
	})
	if err == nil {
		err = d.flush()
	}
	d.close()
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", l.dir, err)
	}
	l.verifyBlobs(rep, refs)
	for _, t := range derivedTables {
		if err := compareTable(ctx, rep, t.name, t.order, l.db, tx); err != nil {
			return nil, fmt.Errorf("verify %s: compare %s: %w", l.dir, t.name, err)
		}
	}
	if opts.Against != nil {
		l.verifyAgainst(ctx, rep, *opts.Against)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		return rep.Findings[i].Severity == SeverityError && rep.Findings[j].Severity != SeverityError
	})
	return rep, nil
}

// verifyChain checks every link and hands each readable entry to replay.
func (l *Ledger) verifyChain(ctx context.Context, rep *VerifyReport, refs map[Digest]int64, replay func(*Entry)) error {
	var last int64
	var lastHash Digest
	lastOK := true // whether lastHash can be trusted as the previous link
	bad := func(seq int64, format string, args ...any) {
		rep.add(Finding{Severity: SeverityError, Check: "chain", Seq: seq, Message: fmt.Sprintf(format, args...)})
	}
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
	}
}

func (l *Ledger) checkGenesis(rep *VerifyReport, e *Entry) {
	var b InitBody
	if e.Kind != KindInit || decodeBody(e, &b) != nil || b.LedgerID != l.id || !e.Prev.IsZero() {
		rep.add(Finding{Severity: SeverityError, Check: "chain", Seq: 1,
			Message: fmt.Sprintf("the first entry is not this ledger's %s entry for ledger id %s", KindInit, l.id)})
	}
}

// verifyBlobs re-hashes every referenced blob, two files at a time per core,
// and notes files in the store that no entry names.
func (l *Ledger) verifyBlobs(rep *VerifyReport, refs map[Digest]int64) {
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
				f, err := os.Open(l.blobPath(ds[i]))
				if err == nil {
					res.got, res.size, err = SumReader(f)
					f.Close()
				}
				res.err = err
				results[i] = res
			}
		}()
	}
	for i := range ds {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, res := range results {
		seq := refs[res.d]
		switch {
		case os.IsNotExist(res.err):
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
	l.noteStrayBlobs(rep, refs)
}

// noteStrayBlobs notes blobs no entry names (a crash between storing a blob
// and appending its entry leaves one; harmless) and leftover temp files.
func (l *Ledger) noteStrayBlobs(rep *VerifyReport, refs map[Digest]int64) {
	root := filepath.Join(l.dir, blobsDir)
	filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil {
			rep.add(Finding{Severity: SeverityError, Check: "blob", Message: fmt.Sprintf("cannot list %s: %v", path, err)})
			return nil
		}
		if de.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == tmpDir {
			rep.add(Finding{Severity: SeverityNote, Check: "blob", Message: "leftover temporary file from an interrupted write: " + path})
			return nil
		}
		d, perr := ParseDigest(de.Name())
		switch {
		case perr != nil || filepath.Dir(rel) != d.Hex()[:2]:
			rep.add(Finding{Severity: SeverityNote, Check: "blob", Message: "file in the blob store that is not a blob: " + path})
		default:
			if _, ok := refs[d]; !ok {
				rep.add(Finding{Severity: SeverityNote, Check: "blob", Digest: d.String(), Message: "no entry names this blob (left by an interrupted write; harmless)"})
			}
		}
		return nil
	})
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
