// Package ledgers holds the commands on a ledger itself, each one call
// that opens it, reads or writes it and returns a result with its text:
// rlgate init (Init), head (Head), log (Log), show (Show), runs (Runs),
// verify (Verify) and ledger copy (Copy). The ledger's text comes from
// ledgers that may hold any bytes, so every field read from one is printed
// through ledger.Printable (textout's tables do it for their cells).
package ledgers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/progress"
	"github.com/rlgate/rlgate/workflow/textout"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Created is a new ledger, as rlgate init prints it.
type Created struct {
	LedgerID string `json:"ledger_id"`
	Dir      string `json:"dir"`
	// PostgreSQL and Blobs say, for a PostgreSQL ledger, where it is (its
	// URL without the password) and where its blobs go.
	PostgreSQL string      `json:"postgresql,omitempty"`
	Blobs      string      `json:"blobs,omitempty"`
	Head       ledger.Head `json:"head"`
}

// Init creates the ledger in dir (ledger.Init).
func Init(ctx context.Context, dir string) (*Created, error) {
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	s := &Created{LedgerID: l.ID(), Dir: l.Dir(), Head: head}
	if l.IsPostgres() {
		s.PostgreSQL, s.Blobs = l.Location(), l.BlobsLocation()
	}
	return s, nil
}

// WriteText says where the ledger was made and its head.
func (s *Created) WriteText(w io.Writer) error {
	var err error
	if s.PostgreSQL != "" {
		_, err = fmt.Fprintf(w, "created ledger %s in PostgreSQL at %s, blobs in %s\nhead %s\n", s.LedgerID, s.PostgreSQL, s.Blobs, s.Head)
	} else {
		_, err = fmt.Fprintf(w, "created ledger %s in %s\nhead %s\n", s.LedgerID, s.Dir, s.Head)
	}
	return err
}

// HeadSummary is a ledger's head, with its text as reports embed it.
type HeadSummary struct {
	ledger.Head
	Text string `json:"head"`
}

// Head reads the head of the ledger in dir, read-only.
func Head(ctx context.Context, dir string) (*HeadSummary, error) {
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	h, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	return &HeadSummary{Head: h, Text: h.String()}, nil
}

// WriteText writes the head's text.
func (s *HeadSummary) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, ledger.Printable(s.Text)) // the ledger id is as meta holds it
	return err
}

// LogOptions choose the entries rlgate log lists.
type LogOptions struct {
	Kind, Run string
	// Limit keeps the first Limit matching entries, Tail the last Tail;
	// zero means all.
	Limit, Tail int
}

// Listed is the entries rlgate log lists, and what chose them.
type Listed struct {
	Entries []ledger.Entry
	LogOptions
}

// Widths in the log table: the body gets what the other columns leave.
const (
	hashPrefix = 12 // hex digits of an entry hash shown in tables
	runPreview = 24
)

// Log lists the entries of the ledger in dir that o chooses, in chain
// order, read-only.
func Log(ctx context.Context, dir string, o LogOptions) (*Listed, error) {
	if o.Limit > 0 && o.Tail > 0 {
		return nil, usage.Errorf("--limit and --tail exclude each other")
	}
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	entries := []ledger.Entry{}
	n := 0 // entries matched; with a tail, entries is a ring of the last Tail
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: o.Kind, Run: o.Run}) {
		if err != nil {
			return nil, err
		}
		if o.Tail > 0 && len(entries) == o.Tail {
			entries[n%o.Tail] = e
		} else {
			entries = append(entries, e)
		}
		n++
		if len(entries) == o.Limit {
			break
		}
	}
	if o.Tail > 0 && n > o.Tail {
		k := n % o.Tail // the oldest kept entry
		entries = append(entries[k:], entries[:k]...)
	}
	return &Listed{Entries: entries, LogOptions: o}, nil
}

// WriteText writes the entries as a table that fits the terminal, then
// how many there are and what chose them.
func (s *Listed) WriteText(w io.Writer) error {
	header := []string{"seq", "at (UTC)", "kind", "run", "hash", "body"}
	rows := make([][]string, len(s.Entries))
	for i, e := range s.Entries {
		rows[i] = []string{fmt.Sprint(e.Seq), e.At[:10] + " " + e.At[11:19], e.Kind, textout.Preview(e.Run, runPreview), e.Hash.Hex()[:hashPrefix], string(e.Body)}
	}
	textout.FitTable(header, rows, len(header)-1)
	t := textout.NewTable(w, textout.Cells(header)...)
	for _, r := range rows {
		t.Append(textout.Cells(r)...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d entries%s\n", len(s.Entries), ledger.Printable(s.filterNote()))
	return err
}

func (s *Listed) filterNote() string {
	var parts []string
	if s.Kind != "" {
		parts = append(parts, "kind "+s.Kind)
	}
	if s.Run != "" {
		parts = append(parts, "run "+s.Run)
	}
	if s.Limit > 0 {
		parts = append(parts, fmt.Sprintf("the first %d", s.Limit))
	}
	if s.Tail > 0 {
		parts = append(parts, fmt.Sprintf("the last %d", s.Tail))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Show reads one entry of the ledger in dir, read-only: which is its
// sequence number (up to 7 digits) or, anything longer, 4 to 64 hex digits
// its hash starts with, with or without "blake3:", as rlgate head and log
// print them; anything else is a usage.Error.
func Show(ctx context.Context, dir, which string) (*ledger.Entry, error) {
	var seq int64
	h := strings.TrimPrefix(which, "blake3:")
	if n, err := strconv.ParseInt(which, 10, 64); err == nil && len(which) < 8 {
		if seq = n; seq < 1 {
			return nil, usage.Errorf("show %s: sequence numbers start at 1", which)
		}
	} else if len(h) < 4 || len(h) > 64 || strings.Trim(strings.ToLower(h), "0123456789abcdef") != "" {
		return nil, usage.Errorf("show %q: want an entry's SEQ (a number from 1) or 4 to 64 hex digits of its HASH", which)
	}
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var e ledger.Entry
	if seq > 0 {
		e, err = l.EntryBySeq(ctx, seq)
	} else {
		e, err = l.EntryByHash(ctx, which)
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// WriteEntry writes e in full, its body indented.
func WriteEntry(w io.Writer, e *ledger.Entry) error {
	// Kind, run, time and body are as the ledger's rows hold them,
	// which for an old or forged ledger may be any bytes.
	fmt.Fprintf(w, "seq   %d\nhash  %s\nprev  %s\nkind  %s\n", e.Seq, e.Hash, e.Prev, ledger.Printable(e.Kind))
	if e.Run != "" {
		fmt.Fprintf(w, "run   %s\n", ledger.Printable(e.Run))
	}
	fmt.Fprintf(w, "at    %s\n", ledger.Printable(e.At))
	for _, b := range e.Blobs {
		fmt.Fprintf(w, "blob  %s\n", b)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, e.Body, "", "  "); err != nil {
		return err
	}
	fmt.Fprintln(w, "body")
	for line := range strings.Lines(pretty.String()) {
		fmt.Fprintln(w, ledger.Printable(strings.TrimSuffix(line, "\n")))
	}
	return nil
}

// RunRow is one run as rlgate runs prints it.
type RunRow struct {
	ledger.Run
	// DurationS is from run.start to run.end; absent while running.
	DurationS *float64 `json:"duration_s,omitempty"`
	// Reason is the run.end body's "reason", where the recorder gave one.
	Reason string `json:"reason,omitempty"`
}

// Runs lists the runs of the ledger in dir in start order, read-only.
func Runs(ctx context.Context, dir string) ([]RunRow, error) {
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	runs, err := l.Runs(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]RunRow, 0, len(runs))
	for _, r := range runs {
		row := RunRow{Run: r}
		if r.EndedSeq != nil {
			// Every writer's run.end carries Reason as Fail writes it.
			body, err := ledger.DecodeEntry[ledger.FailedBody](ctx, l, *r.EndedSeq)
			if err != nil {
				return nil, fmt.Errorf("run %q: read its run.end: %w", r.Run, err)
			}
			row.Reason = body.Reason
			start, err1 := time.Parse(time.RFC3339Nano, r.StartedAt)
			stop, err2 := time.Parse(time.RFC3339Nano, r.EndedAt)
			if err1 == nil && err2 == nil {
				d := stop.Sub(start).Seconds()
				row.DurationS = &d
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// WriteRuns writes the runs as a table that fits the terminal, the
// reason cut (it is whole in --json), then how many there are.
func WriteRuns(w io.Writer, rows []RunRow) error {
	header := []string{"run", "status", "stage", "started (UTC)", "duration", "reason"}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		dur := "-"
		if r.DurationS != nil {
			dur = (time.Duration(*r.DurationS * float64(time.Second))).Round(time.Second).String()
		}
		cells[i] = []string{r.Run.Run, string(r.Status), r.Stage, r.StartedAt[:10] + " " + r.StartedAt[11:19], dur, r.Reason}
	}
	textout.FitTable(header, cells, len(header)-1)
	t := textout.NewTable(w, textout.Cells(header)...)
	for _, c := range cells {
		t.Append(textout.Cells(c)...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d runs\n", len(rows))
	return err
}

// Verified is what verifying a ledger found, and where the ledger is.
type Verified struct {
	*ledger.VerifyReport
	Dir string // the ledger's directory, as its error names it
}

// Verify checks the ledger in dir, read-only (ledger.Verify), against a
// head printed earlier (ID/SEQ/blake3:HASH) when against is not empty; one
// that does not parse is a usage.Error.
func Verify(ctx context.Context, dir, against string) (*Verified, error) {
	var o ledger.VerifyOptions
	if against != "" {
		h, err := ledger.ParseHead(against)
		if err != nil {
			return nil, usage.Errorf("--against: %v", err)
		}
		o.Against = &h
	}
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	rep, err := l.Verify(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Verified{VerifyReport: rep, Dir: l.Dir()}, nil
}

// WriteText writes every finding, then the counts and the head.
func (v *Verified) WriteText(w io.Writer) error {
	for _, f := range v.Findings {
		fmt.Fprintln(w, ledger.Printable(fmt.Sprint(f)))
	}
	_, err := fmt.Fprintf(w, "%d entries, %d blobs (%d bytes) checked: %d errors, %d notes\nhead %s\n",
		v.Entries, v.BlobsChecked, v.BlobBytes, v.Errors, v.Notes, ledger.Printable(fmt.Sprint(v.Head)))
	return err
}

// CopyOptions say where rlgate ledger copy reports its progress.
type CopyOptions struct {
	Progress io.Writer // nil: nowhere
	Terminal bool      // Progress is a terminal, where a bar is redrawn in place
}

// Copy copies the ledger at from into to (ledger.Copy), with a progress
// bar of the entries copied.
func Copy(ctx context.Context, from, to string, o CopyOptions) (*ledger.CopyResult, error) {
	switch {
	case from == "":
		return nil, usage.Errorf("ledger copy: --from DIR is required")
	case to == "":
		return nil, usage.Errorf("ledger copy: --to DIR is required")
	}
	src, err := ledger.OpenReadOnly(ctx, from)
	if errors.Is(err, ledger.ErrNoLedger) {
		return nil, &ledger.Error{Op: "ledger copy --from", Path: from, Err: ledger.ErrNoLedger,
			Hint: "give --from a ledger directory (made by rlgate init or rlgate ledger copy)"}
	}
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var bar *progress.Bar
	var shown int64
	res, err := ledger.Copy(ctx, src, to, ledger.CopyOptions{Progress: func(copied, total int64) {
		if bar == nil && total > 0 {
			bar = progress.Start(o.Progress, o.Terminal, 0, "ledger copy", from, "entries", int(total))
		}
		for ; bar != nil && shown < copied; shown++ {
			bar.Done(false)
		}
	}})
	if bar != nil {
		bar.Finish()
	}
	return res, err
}

// WriteCopy says what a copy copied and the head it reached.
func WriteCopy(w io.Writer, res *ledger.CopyResult) error {
	made := ""
	if res.Created {
		made = " (a new ledger)"
	}
	_, err := fmt.Fprintf(w, "copied %d entries and %d blobs (%d bytes) from %s to %s%s\nhead %s\n",
		res.Entries, res.Blobs, res.BlobBytes, res.From, res.To, made, res.Head)
	return err
}

// Failure says what verifying found wrong, for the command's exit status;
// empty when the ledger verified.
func (v *Verified) Failure() string {
	if v.OK() {
		return ""
	}
	return fmt.Sprintf("verify %s: %d errors", v.Dir, v.Errors)
}
