package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rlgate/rlgate/ledger/records"
)

// RunStart is the part of a run.start body the ledger reads; callers add
// whatever else the run should record (argv, configs, code version).
type RunStart struct {
	Stage string `json:"stage"`
}

// RunEnd is the part of a run.end body the ledger reads. Status is one of
// records.StatusOK, StatusFailed or StatusInterrupted.
type RunEnd struct {
	Status   records.Status `json:"status"`
	ExitCode *int           `json:"exit_code,omitempty"`
}

// Artifact is the part of an artifact body the ledger reads: a dataset,
// file, config or checkpoint a run took in or gave out, named by digest.
type Artifact struct {
	Role     records.Role         `json:"role"`
	Name     string               `json:"name"`
	Kind     records.ArtifactKind `json:"kind"`
	Digest   Digest               `json:"digest"`
	Manifest *Digest              `json:"manifest,omitempty"` // blob holding the full manifest
}

// deriver fills the derived tables from entries inside one transaction. The
// same code fills a ledger's own tables and, in verify, a scratch copy to
// compare them with, so the two can never disagree by construction.
type deriver struct {
	ctx   context.Context
	tx    execer
	stmts map[string]*sql.Stmt
	// pending holds rows of append-only tables (blob_refs, metrics) until
	// flush writes them many to a statement; nothing reads those tables
	// inside an append.
	pending map[string][][]any
	// pack is deriveMetrics' buffer for large batches.
	pack []byte
	// deltas: metrics rows hold their steps as varint differences (SQLite's
	// derived tables since version 3); else as little-endian int64
	// (PostgreSQL's, version 1). See stepColumn.
	deltas bool
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// newDeriver derives rows into tx in the layout of a SQLite ledger's
// derived tables (pg: a PostgreSQL ledger's, whose verify derives them
// into a SQLite scratch database to compare).
func newDeriver(ctx context.Context, tx execer, pg bool) *deriver {
	return &deriver{ctx: ctx, tx: tx, stmts: map[string]*sql.Stmt{}, deltas: !pg}
}

// later queues a row for table, written by flush.
func (d *deriver) later(table string, row ...any) {
	if d.pending == nil {
		d.pending = map[string][][]any{}
	}
	d.pending[table] = append(d.pending[table], row)
}

// flushChunk is how many queued rows one INSERT writes.
const flushChunk = 64

// flush writes the queued rows, in queue order, several to a statement.
func (d *deriver) flush() error {
	tables := make([]string, 0, len(d.pending))
	for t := range d.pending {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, table := range tables {
		rows := d.pending[table]
		args := make([]any, 0, len(rows)*len(rows[0]))
		for _, r := range rows {
			args = append(args, r...)
		}
		if err := d.insertRows(table, len(rows[0]), args); err != nil {
			return fmt.Errorf("derive %s: %w", table, err)
		}
	}
	d.pending = nil
	return nil
}

// insertRows writes rows of width values each, laid end to end in args,
// into table (its name and columns), flushChunk rows to a statement.
func (d *deriver) insertRows(table string, width int, args []any) error {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for start := 0; start < len(args); start += flushChunk * width {
		chunk := args[start:min(start+flushChunk*width, len(args))]
		if _, err := d.exec("INSERT INTO "+table+" VALUES "+strings.TrimSuffix(strings.Repeat(one+", ", len(chunk)/width), ", "), chunk...); err != nil {
			return err
		}
	}
	return nil
}

func (d *deriver) close() {
	for _, s := range d.stmts {
		s.Close()
	}
}

func (d *deriver) exec(query string, args ...any) (sql.Result, error) {
	s, ok := d.stmts[query]
	if !ok {
		var err error
		if s, err = d.tx.PrepareContext(d.ctx, query); err != nil {
			return nil, err
		}
		d.stmts[query] = s
	}
	return s.ExecContext(d.ctx, args...)
}

// apply derives the rows of one entry. typed, when not nil, is the body as
// the caller appended it, which spares decoding the JSON again; verify and
// rebuilds pass nil and decode.
func (d *deriver) apply(e *Entry, typed any) error {
	for _, b := range e.Blobs {
		d.later("blob_refs(digest, seq)", b.Hex(), e.Seq)
	}
	switch e.Kind {
	case records.KindRunStart:
		var b RunStart
		if err := decodeBody(e, &b); err != nil {
			return err
		}
		if e.Run == "" || b.Stage == "" {
			return fmt.Errorf("%w: run.start needs a run id and a stage", ErrBadRecord)
		}
		if _, err := d.exec("INSERT INTO runs(run, stage, status, started_seq, started_at) VALUES (?, ?, 'running', ?, ?)",
			e.Run, b.Stage, e.Seq, e.At); err != nil {
			return fmt.Errorf("run %q: %w", e.Run, err)
		}
	case records.KindRunEnd:
		var b RunEnd
		if err := decodeBody(e, &b); err != nil {
			return err
		}
		if !b.Status.Ended() {
			return fmt.Errorf("%w: run.end status %q", ErrBadRecord, b.Status)
		}
		res, err := d.exec("UPDATE runs SET status = ?, ended_seq = ?, ended_at = ?, exit_code = ? WHERE run = ? AND ended_seq IS NULL",
			b.Status, e.Seq, e.At, b.ExitCode, e.Run)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%w: run.end for run %q, which is not running", ErrBadRecord, e.Run)
		}
	case records.KindRunResume:
		res, err := d.exec("UPDATE runs SET status = 'running', ended_seq = NULL, ended_at = NULL, exit_code = NULL WHERE run = ? AND status IN ('interrupted', 'failed')", e.Run)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%w: run.resume for run %q, which is not interrupted or failed", ErrBadRecord, e.Run)
		}
	case records.KindArtifact:
		var b Artifact
		if err := decodeBody(e, &b); err != nil {
			return err
		}
		if b.Role == "" || b.Name == "" || b.Kind == "" || b.Digest.IsZero() {
			return fmt.Errorf("%w: artifact needs role, name, kind and digest", ErrBadRecord)
		}
		manifest := ""
		if b.Manifest != nil {
			manifest = b.Manifest.String()
		}
		if _, err := d.exec("INSERT INTO artifacts(seq, run, role, name, kind, digest, manifest) VALUES (?, ?, ?, ?, ?, ?, ?)",
			e.Seq, e.Run, b.Role, b.Name, b.Kind, b.Digest.String(), manifest); err != nil {
			return err
		}
	case records.KindMetrics:
		return d.deriveMetrics(e, typed)
	case records.KindOutcomes:
		var o Outcomes
		if err := decodeBody(e, &o); err != nil {
			return err
		}
		return d.deriveOutcomes(e, o)
	}
	return nil
}

func decodeBody(e *Entry, v any) error {
	if err := json.Unmarshal(e.Body, v); err != nil {
		return fmt.Errorf("%w: %s body: %v", ErrBadRecord, e.Kind, err)
	}
	return nil
}

// rebuildDerived recreates the derived tables of a SQLite ledger (or a
// SQLite scratch copy of them) in dst from the entries read
// through src, a page at a time so src and dst may be one transaction.
func rebuildDerived(ctx context.Context, src queryer, dst execer) error {
	if _, err := dst.ExecContext(ctx, dropDerivedDDL); err != nil {
		return err
	}
	if _, err := dst.ExecContext(ctx, derivedDDL); err != nil {
		return err
	}
	d := newDeriver(ctx, dst, false)
	defer d.close()
	if err := eachEntryPage(ctx, src, func(e *Entry) error { return d.apply(e, nil) }); err != nil {
		return err
	}
	return d.flush()
}

// entryPage is how many entries a scan holds in memory at once.
const entryPage = 1000

// eachEntryPage calls fn for every entry in seq order, reading a page at a
// time and closing each page before fn runs on it.
func eachEntryPage(ctx context.Context, q queryer, fn func(*Entry) error) error {
	after := int64(0)
	for {
		page, err := queryEntries(ctx, q, "WHERE seq > ? ORDER BY seq LIMIT ?", after, entryPage)
		if err != nil {
			return err
		}
		for i := range page {
			if err := fn(&page[i]); err != nil {
				return fmt.Errorf("entry %d: %w", page[i].Seq, err)
			}
		}
		if len(page) < entryPage {
			return nil
		}
		after = page[len(page)-1].Seq
	}
}
