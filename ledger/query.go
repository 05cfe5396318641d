package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unsafe"

	"github.com/rlgate/rlgate/ledger/records"
)

// rawEntry is a row of the entries table before its fields are checked, so
// verify can report a damaged row instead of stopping at it.
type rawEntry struct {
	seq                                    int64
	prev, hash, kind, run, at, blobs, body string
}

func (r rawEntry) entry() (Entry, error) { return r.entryWith([]byte(r.body)) }

// entryWith is the entry r holds, with body as its body.
func (r rawEntry) entryWith(body []byte) (Entry, error) {
	e := Entry{Seq: r.seq, Kind: r.kind, Run: r.run, At: r.at, Body: body}
	var err error
	if e.Prev, err = ParseDigest(r.prev); err != nil {
		return e, fmt.Errorf("entry %d: prev: %w", r.seq, err)
	}
	if e.Hash, err = ParseDigest(r.hash); err != nil {
		return e, fmt.Errorf("entry %d: hash: %w", r.seq, err)
	}
	if e.Blobs, err = splitDigests(r.blobs); err != nil {
		return e, fmt.Errorf("entry %d: blobs: %w", r.seq, err)
	}
	return e, nil
}

const entryColumns = "SELECT seq, prev, hash, kind, run, at, blobs, body FROM entries "

func queryRaw(ctx context.Context, q queryer, where string, args ...any) ([]rawEntry, error) {
	rows, err := q.QueryContext(ctx, entryColumns+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rawEntry
	for rows.Next() {
		var r rawEntry
		if err := rows.Scan(&r.seq, &r.prev, &r.hash, &r.kind, &r.run, &r.at, &r.blobs, &r.body); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func queryEntries(ctx context.Context, q queryer, where string, args ...any) ([]Entry, error) {
	raw, err := queryRaw(ctx, q, where, args...)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(raw))
	for i, r := range raw {
		if out[i], err = r.entry(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Head names the last entry of a ledger. Printed in reports, it lets a
// reader check later that a ledger still extends the one a report came from.
type Head struct {
	LedgerID string `json:"ledger_id"`
	Seq      int64  `json:"seq"`
	Hash     Digest `json:"hash"`
}

// String renders a head as "<ledger id>/<seq>/blake3:<hex>".
func (h Head) String() string {
	return h.LedgerID + "/" + strconv.FormatInt(h.Seq, 10) + "/" + h.Hash.String()
}

// ParseHead reads what Head.String writes.
func ParseHead(s string) (Head, error) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 {
		return Head{}, fmt.Errorf("parse head %q: want <ledger id>/<seq>/blake3:<hex>", s)
	}
	seq, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || seq < 1 {
		return Head{}, fmt.Errorf("parse head %q: bad seq %q", s, parts[1])
	}
	d, err := ParseDigest(parts[2])
	if err != nil {
		return Head{}, fmt.Errorf("parse head %q: %w", s, err)
	}
	return Head{LedgerID: parts[0], Seq: seq, Hash: d}, nil
}

// Head returns the ledger's last entry as a Head.
func (l *Ledger) Head(ctx context.Context) (Head, error) {
	if c := l.chk; c != nil {
		return Head{LedgerID: l.id, Seq: c.at, Hash: c.hashes[c.at-1]}, nil
	}
	es, err := queryEntries(ctx, l.db, "ORDER BY seq DESC LIMIT 1")
	if err != nil {
		return Head{}, fmt.Errorf("read head: %w", err)
	}
	if len(es) == 0 {
		return Head{}, fmt.Errorf("read head of %s: %w: the ledger has no entries", l.dir, ErrNotFound)
	}
	return Head{LedgerID: l.id, Seq: es[0].Seq, Hash: es[0].Hash}, nil
}

// EntryBySeq returns the entry with the given sequence number.
func (l *Ledger) EntryBySeq(ctx context.Context, seq int64) (Entry, error) {
	db := l.db
	if c := l.chk; c != nil {
		if seq < 1 || seq > c.at {
			return Entry{}, fmt.Errorf("entry %d: %w", seq, ErrNotFound)
		}
		db = c.src.db
	}
	es, err := queryEntries(ctx, db, "WHERE seq = ?", seq)
	if err != nil {
		return Entry{}, err
	}
	if len(es) == 0 {
		if l.chk != nil {
			return Entry{}, l.tampered(seq, "is no longer in the ledger as it was when the view read it")
		}
		return Entry{}, fmt.Errorf("entry %d: %w", seq, ErrNotFound)
	}
	if l.chk != nil {
		if err := l.checkRead(&es[0]); err != nil {
			return Entry{}, err
		}
	}
	return es[0], nil
}

// DecodeBody reads the body of entry seq into v. Fields v lacks are
// ignored: readers (audits, reports) decode by name what other commands
// recorded, so a body that gained fields still reads.
func (l *Ledger) DecodeBody(ctx context.Context, seq int64, v any) error {
	e, err := l.EntryBySeq(ctx, seq)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(e.Body, v); err != nil {
		return fmt.Errorf("entry %d: %w", seq, err)
	}
	return nil
}

// DecodeEntry reads entry seq and decodes its body as a T with
// records.Decode, which checks the entry's kind, its body's version and
// that T is the registered body type (or embeds it).
func DecodeEntry[T any](ctx context.Context, l *Ledger, seq int64) (T, error) {
	e, err := l.EntryBySeq(ctx, seq)
	if err != nil {
		var zero T
		return zero, err
	}
	t, err := records.Decode[T](e.Kind, e.Body)
	if err != nil {
		return t, fmt.Errorf("entry %d: %w", seq, err)
	}
	return t, nil
}

// EntryByHash returns the entry whose hash starts with prefix (hex digits,
// with or without "blake3:"; at least 4 digits).
func (l *Ledger) EntryByHash(ctx context.Context, prefix string) (Entry, error) {
	p := strings.ToLower(strings.TrimPrefix(prefix, digestPrefix))
	if len(p) < 4 || len(p) > 64 || strings.Trim(p, "0123456789abcdef") != "" {
		return Entry{}, fmt.Errorf("entry %q: want 4 to 64 hex digits of an entry hash", prefix)
	}
	if l.chk != nil {
		return l.checkedByHash(ctx, p)
	}
	es, err := queryEntries(ctx, l.db, "WHERE hash >= ? AND hash <= ? ORDER BY seq LIMIT 2", p, p+strings.Repeat("f", 64-len(p)))
	if err != nil {
		return Entry{}, err
	}
	switch len(es) {
	case 0:
		return Entry{}, fmt.Errorf("entry %s: %w", prefix, ErrNotFound)
	case 1:
		return es[0], nil
	}
	return Entry{}, fmt.Errorf("entry %s: %w: seq %d and %d both match; give more digits", prefix, ErrAmbiguous, es[0].Seq, es[1].Seq)
}

// Filter selects entries. Zero fields match everything.
type Filter struct {
	Kind     string
	Run      string
	AfterSeq int64
	// Limit, when above 0, stops after that many entries, and no more
	// are read from the database: a viewer showing one page of a run's
	// entries holds that page's bodies, not a thousand. (A checked view
	// reads in batches of its own.)
	Limit int
}

// Entries yields the entries that match f in seq order, reading a page at a
// time, so it can walk a large ledger in little memory.
func (l *Ledger) Entries(ctx context.Context, f Filter) iter.Seq2[Entry, error] {
	page := entryPage
	if f.Limit > 0 {
		page = min(page, f.Limit)
	}
	all := l.entries(ctx, f, page)
	if f.Limit <= 0 {
		return all
	}
	return func(yield func(Entry, error) bool) {
		n := 0
		for e, err := range all {
			if !yield(e, err) || err != nil {
				return
			}
			if n++; n == f.Limit {
				return
			}
		}
	}
}

// entries is Entries reading pageSize entries at a time.
func (l *Ledger) entries(ctx context.Context, f Filter, pageSize int) iter.Seq2[Entry, error] {
	if l.chk != nil {
		return l.checkedEntries(ctx, f)
	}
	return func(yield func(Entry, error) bool) {
		after := f.AfterSeq
		for {
			where := "WHERE seq > ?"
			args := []any{after}
			if f.Kind != "" {
				where += " AND kind = ?"
				args = append(args, f.Kind)
			}
			if f.Run != "" {
				where += " AND run = ?"
				args = append(args, f.Run)
			}
			page, err := queryEntries(ctx, l.db, where+" ORDER BY seq LIMIT ?", append(args, pageSize)...)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			after = page[len(page)-1].Seq
		}
	}
}

// Run is a row of the derived runs table.
type Run struct {
	Run        string         `json:"run"`
	Stage      string         `json:"stage"`
	Status     records.Status `json:"status"`
	StartedSeq int64          `json:"started_seq"`
	StartedAt  string         `json:"started_at"`
	EndedSeq   *int64         `json:"ended_seq,omitempty"`
	EndedAt    string         `json:"ended_at,omitempty"`
	ExitCode   *int           `json:"exit_code,omitempty"`
}

// Runs lists every run in start order.
func (l *Ledger) Runs(ctx context.Context) ([]Run, error) {
	return l.queryRuns(ctx, "ORDER BY started_seq")
}

// RunFilter selects rows of the runs table; zero fields match every run.
type RunFilter struct {
	Stage  string
	Status records.Status
}

// where is f as a WHERE clause (or "") and its arguments.
func (f RunFilter) where() (string, []any) {
	var conds []string
	var args []any
	if f.Stage != "" {
		conds, args = append(conds, "stage = ?"), append(args, f.Stage)
	}
	if f.Status != "" {
		conds, args = append(conds, "status = ?"), append(args, string(f.Status))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return "WHERE " + strings.Join(conds, " AND ") + " ", args
}

// RunsPage lists at most limit of the runs f selects, in start order,
// after skipping the first offset: one page of the runs table, read
// without the rest, so a viewer's memory is bounded by its page.
func (l *Ledger) RunsPage(ctx context.Context, f RunFilter, offset, limit int) ([]Run, error) {
	where, args := f.where()
	return l.queryRuns(ctx, where+"ORDER BY started_seq LIMIT ? OFFSET ?", append(args, limit, offset)...)
}

// CountRuns counts the runs f selects.
func (l *Ledger) CountRuns(ctx context.Context, f RunFilter) (int, error) {
	where, args := f.where()
	var n int
	err := l.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs "+where, args...).Scan(&n)
	return n, err
}

// RunStages lists the distinct stages of the runs table, sorted.
func (l *Ledger) RunStages(ctx context.Context) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, "SELECT DISTINCT stage FROM runs ORDER BY stage")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// queryRuns reads the rows of the runs table that rest, a WHERE and
// ORDER BY tail, selects.
func (l *Ledger) queryRuns(ctx context.Context, rest string, args ...any) ([]Run, error) {
	rows, err := l.db.QueryContext(ctx, "SELECT run, stage, status, started_seq, started_at, ended_seq, COALESCE(ended_at, ''), exit_code FROM runs "+rest, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var ended sql.NullInt64
		var code sql.NullInt64
		if err := rows.Scan(&r.Run, &r.Stage, &r.Status, &r.StartedSeq, &r.StartedAt, &ended, &r.EndedAt, &code); err != nil {
			return nil, err
		}
		if ended.Valid {
			r.EndedSeq = &ended.Int64
		}
		if code.Valid {
			c := int(code.Int64)
			r.ExitCode = &c
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ArtifactRow is a row of the derived artifacts table.
type ArtifactRow struct {
	Seq int64  `json:"seq"`
	Run string `json:"run,omitempty"`
	Artifact
}

// ArtifactsByDigest lists the artifacts recorded with digest d, oldest
// first; lineage uses it to find the run that produced an input.
func (l *Ledger) ArtifactsByDigest(ctx context.Context, d Digest) ([]ArtifactRow, error) {
	rows, err := l.db.QueryContext(ctx, "SELECT seq, run, role, name, kind, digest, manifest FROM artifacts WHERE digest = ? ORDER BY seq", d.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ArtifactRow
	for rows.Next() {
		var a ArtifactRow
		var dg, man string
		if err := rows.Scan(&a.Seq, &a.Run, &a.Role, &a.Name, &a.Kind, &dg, &man); err != nil {
			return nil, err
		}
		if a.Digest, err = ParseDigest(dg); err != nil {
			return nil, err
		}
		if man != "" {
			m, err := ParseDigest(man)
			if err != nil {
				return nil, err
			}
			a.Manifest = &m
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// readOnlyBytes is s's bytes, not a copy of them. Writing to them would
// change an immutable string: only code that reads its input may be given
// them (hashing, decoding).
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
