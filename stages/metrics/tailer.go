package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/rlgate/rlgate/ledger/untrusted"
)

// readChunk is the read size for text formats; a line longer than the
// buffer grows it.
const readChunk = 1 << 20

// Options select how a metrics file is parsed.
type Options struct {
	// Format of the file; empty or FormatAuto means Detect.
	Format Format
	// StepKey names the step member of generic JSONL records; empty means
	// "step". The other formats fix their own.
	StepKey string
}

// Cursor is how far a Tailer has read: save it with the points a read
// returned, in the same transaction, and a later Tailer started from it
// yields exactly the points not yet saved — nothing lost, nothing twice,
// whenever the process died.
type Cursor struct {
	// Offset is the byte after the last complete record (0 for TRL, whose
	// file is rewritten whole).
	Offset int64 `json:"offset"`
	// Line is the number of lines before Offset, so that errors after a
	// resume still name the right line.
	Line int64 `json:"line"`
	// Records is the number of step records consumed; TRL resumes by it.
	Records int64 `json:"records"`
}

// lineDecoder parses a text format line by line.
type lineDecoder interface {
	// line parses one line, without its newline, that starts at at.
	line(sk *sink, b []byte, at Cursor) error
	// pending reports where a record still open at the end of input starts.
	pending() (Cursor, bool)
	// flush commits an open record: the writer is done.
	flush(sk *sink)
	// drop discards an open record, to be parsed again by the next read.
	drop(sk *sink)
}

// Tailer reads a metrics file that may still be growing, returning only
// complete records and holding back a partial last line or record until it
// is complete. Call Next while the trainer runs and Final once it has exited.
// A Tailer is not safe for concurrent use.
type Tailer struct {
	path   string
	format Format
	lines  lineDecoder // text formats
	scan   jsonScanner // TRL
	cur    Cursor
	sk     sink
	buf    []byte
	// Tracker formats: the run their files describe, their decoders, and
	// whether reading has stopped for good (a corrupt tail; MLflow, read
	// once).
	run     *TrackerRun
	wandb   wandbDecoder
	swan    swanDecoder
	stopped bool
}

// NewTailer returns a Tailer that reads path from the cursor from (the zero
// Cursor for the start of the file). With no format in opts the format is
// detected from the file, which must then exist. For a tracker format path
// may be the run's directory; it must exist.
func NewTailer(path string, opts Options, from Cursor) (*Tailer, error) {
	f := opts.Format
	if f == "" || f == FormatAuto {
		var err error
		if f, err = Detect(path); err != nil {
			return nil, err
		}
	}
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, err
	}
	t := &Tailer{path: path, format: f, cur: from}
	if f.IsTracker() {
		resolved, err := resolveTracker(path, f)
		if err != nil {
			return nil, err
		}
		t.path = resolved
		t.run = &TrackerRun{Tracker: f, Source: path}
	}
	switch f {
	case FormatWandB:
		if filepath.Ext(t.path) != ".wandb" && !bytes.HasPrefix(fileHead(t.path, len(wandbIdent)), []byte(wandbIdent)) {
			// The pre-0.10 wandb-history.jsonl: one row per line, its
			// step under _step.
			t.lines = &jsonlDecoder{stepKey: "_step"}
		}
	case FormatVerl:
		t.lines = &jsonlDecoder{stepKey: "step", dataKey: "data"}
	case FormatJSONL:
		key := opts.StepKey
		if key == "" {
			key = "step"
		}
		t.lines = &jsonlDecoder{stepKey: key}
	case FormatVerlConsole:
		t.lines = &consoleDecoder{}
	case FormatLlamaFactory:
		t.lines = &jsonlDecoder{stepKey: "current_steps"}
	case FormatSkyRLConsole:
		t.lines = &skyrlDecoder{}
	case FormatOpenRLHFConsole:
		t.lines = &openrlhfDecoder{}
	}
	return t, nil
}

// ParseFile reads a finished metrics file whole.
func ParseFile(path string, opts Options) ([]Point, Stats, error) {
	t, err := NewTailer(path, opts, Cursor{})
	if err != nil {
		return nil, Stats{}, err
	}
	pts, err := t.Final()
	return pts, t.Stats(), err
}

// Run returns what a tracker format's files say about the run (nil for
// the other formats); it is complete after Final.
func (t *Tailer) Run() *TrackerRun { return t.run }

// fileHead returns up to n first bytes of the file at path.
func fileHead(path string, n int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, n)
	m, _ := io.ReadFull(f, b)
	return b[:m]
}

// Format returns the format the Tailer reads.
func (t *Tailer) Format() Format { return t.format }

// Cursor returns the position after the records returned so far.
func (t *Tailer) Cursor() Cursor { return t.cur }

// Stats returns counts accumulated since the Tailer was created.
func (t *Tailer) Stats() Stats { return t.sk.stats }

// Next returns the points of records completed since the last read. A
// partial last line, an open console record or a truncated TensorBoard
// record is held back (see Stats.PendingBytes). On a parse error Next
// returns the points before the fault, with the cursor after them, and a
// *ParseError; a missing file is an error wrapping fs.ErrNotExist.
func (t *Tailer) Next() ([]Point, error) { return t.read(false) }

// Final is Next for a file whose writer has finished: a last line without a
// newline and an open console record are complete too. A truncated last
// TensorBoard record is still only reported in Stats.PendingBytes, since a
// killed trainer leaves one; a truncated TRL document is an error.
func (t *Tailer) Final() ([]Point, error) { return t.read(true) }

// Stream makes the Tailer hand the points it reads to fn, in order, in
// chunks of exactly n as records complete, instead of holding them all
// for Final or Next, which then return only the points after the last
// whole chunk. fn must not keep the slice: its memory is reused. An
// import of a long run (5 M points) then holds one chunk instead of the
// run, whose slice alone was 160 MB for the kernel to map and clear.
func (t *Tailer) Stream(n int, fn func([]Point)) {
	t.sk.flush, t.sk.chunk = fn, n
}

func (t *Tailer) read(final bool) ([]Point, error) {
	// An MLflow run and a legacy SwanLab run are directories, whose files
	// their readers open; every other format is one file, opened here.
	var f *os.File
	if t.format != FormatMLflow && !t.swanLegacy() {
		var err error
		if f, err = untrusted.Open(t.path); err != nil {
			return nil, fmt.Errorf("read metrics: %w", err)
		}
		defer f.Close()
	}
	var err error
	before := t.sk.stats.Records
	switch {
	case t.format == FormatTensorBoard:
		err = t.readRecords(f)
	case t.format == FormatTRL:
		err = t.readDocument(f, final)
	case t.format == FormatMLflow:
		err = t.readMLflow(final)
	case t.swanLegacy():
		err = t.readSwanLegacy(final)
	case t.lines == nil:
		err = t.readFramed(f, final)
	default:
		err = t.readLines(f, final)
	}
	if t.run != nil && final {
		if t.run.Status == "" {
			t.run.Status = "incomplete"
		}
		t.readTrackerSide()
	}
	t.cur.Records += t.sk.stats.Records - before
	pts := t.sk.out
	t.sk.out = nil
	return pts, err
}

// seek positions f at the cursor, refusing a file that shrank below it, and
// returns the file's size.
func (t *Tailer) seek(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("read metrics: %w", err)
	}
	if fi.Size() < t.cur.Offset {
		return 0, fmt.Errorf("read metrics %s: %d bytes, cursor at %d: %w", t.path, fi.Size(), t.cur.Offset, ErrRewound)
	}
	if _, err := f.Seek(t.cur.Offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read metrics: %w", err)
	}
	return fi.Size(), nil
}

// reserve grows the output for the points the rest of a file will likely
// hold, judged from the points per byte so far: growing a slice of
// 800,000 points by doubling costs a third of a large parse.
func (t *Tailer) reserve(done, left int64) {
	if done <= 0 || left <= 0 || t.sk.flush != nil {
		return
	}
	more := int(float64(len(t.sk.out)) / float64(done) * float64(left) * 1.05)
	t.sk.out = slices.Grow(t.sk.out, more)
}

// readLines feeds complete lines to the line decoder.
func (t *Tailer) readLines(f *os.File, final bool) error {
	size, err := t.seek(f)
	if err != nil {
		return err
	}
	pos, commit := t.cur, t.cur
	// fail leaves the cursor after the last complete record and forgets an
	// open one, so that the points returned with err are all complete.
	fail := func(err error) error {
		t.lines.drop(&t.sk)
		t.cur.Offset, t.cur.Line = commit.Offset, commit.Line
		return err
	}
	// feed parses one line of n bytes (newline included) and moves the
	// cursors past it.
	feed := func(line []byte, n int) error {
		at := pos
		err := t.lines.line(&t.sk, line, at)
		pos.Offset += int64(n)
		pos.Line++
		if err != nil {
			return t.lineError(at, err)
		}
		// Everything before an open record is committed.
		if from, open := t.lines.pending(); open {
			commit = from
		} else {
			commit = pos
		}
		return nil
	}
	if cap(t.buf) == 0 {
		t.buf = make([]byte, 0, readChunk)
	}
	buf := t.buf[:0]
	defer func() { t.buf = buf[:0] }()
	first := true
	for eof := false; !eof; {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			eof = true
		case err != nil:
			return fail(fmt.Errorf("read metrics: %w", err))
		}
		rest := buf
		for {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				break
			}
			if err := feed(rest[:i], i+1); err != nil {
				return fail(err)
			}
			rest = rest[i+1:]
		}
		buf = buf[:copy(buf, rest)]
		if first {
			first = false
			t.reserve(pos.Offset-t.cur.Offset, size-pos.Offset)
		}
	}
	if final && len(buf) > 0 {
		if err := feed(buf, len(buf)); err != nil {
			return fail(err)
		}
		buf = buf[:0]
	}
	if from, open := t.lines.pending(); open {
		if final {
			t.lines.flush(&t.sk)
			commit = pos
		} else {
			t.lines.drop(&t.sk)
			commit = from
		}
	}
	t.sk.stats.PendingBytes = pos.Offset + int64(len(buf)) - commit.Offset
	t.cur.Offset, t.cur.Line = commit.Offset, commit.Line
	return nil
}

// lineError locates err, raised by the line starting at at.
func (t *Tailer) lineError(at Cursor, err error) error {
	pe := &ParseError{Path: t.path, Line: at.Line + 1, Offset: at.Offset, Err: err}
	var se *syntaxError
	if errors.As(err, &se) {
		pe.Column = int64(se.Offset) + 1
		pe.Offset += int64(se.Offset)
		pe.Err = se.Err
	}
	return pe
}

// readRecords decodes TensorBoard events from the cursor on.
func (t *Tailer) readRecords(f *os.File) error {
	if _, err := t.seek(f); err != nil {
		return err
	}
	rr := recordReader{r: bufio.NewReaderSize(f, readChunk), off: t.cur.Offset}
	for {
		start := rr.off
		data, err := rr.next()
		switch {
		case errors.Is(err, io.EOF):
			t.sk.stats.PendingBytes = 0
			return nil
		case errors.Is(err, errTruncated):
			t.sk.stats.PendingBytes = rr.partial
			return nil
		case err == nil:
			err = decodeEvent(&t.sk, data)
		}
		if err != nil {
			return &ParseError{Path: t.path, Offset: start, Err: err}
		}
		t.cur.Offset = rr.off
	}
}

// readDocument reads TRL's trainer_state.json, which the trainer rewrites
// whole at every save, and returns the log_history entries after the first
// Cursor.Records. A document that ends early is being rewritten: Next
// returns the entries complete so far, Final fails.
func (t *Tailer) readDocument(f *os.File, final bool) error {
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	s := &t.scan
	s.reset(data)
	var seen int64
	done := 0 // offset after the last entry parsed
	err = s.object(func(key []byte) error {
		if string(key) != "log_history" {
			return s.skip(0)
		}
		return s.array(func() error {
			seen++
			if seen <= t.cur.Records {
				return s.skip(0)
			}
			s.skipSpace()
			start := s.pos
			step, err := s.stepRecord(&t.sk, "step", "")
			if err != nil {
				t.sk.drop()
				if !errors.As(err, new(*syntaxError)) {
					err = &syntaxError{Offset: start, Err: err}
				}
				return err
			}
			t.sk.commit(step)
			done = s.pos
			return nil
		})
	})
	if err == nil {
		err = s.expectEnd()
	}
	switch {
	case errors.Is(err, errJSONEnd) && !final:
		t.sk.stats.PendingBytes = int64(len(data) - done)
		return nil
	case err != nil:
		return t.documentError(data, err)
	case seen < t.cur.Records:
		return fmt.Errorf("read metrics %s: %d log_history entries, cursor at %d: %w", t.path, seen, t.cur.Records, ErrRewound)
	}
	t.sk.stats.PendingBytes = 0
	return nil
}

// documentError locates err in a whole JSON document by line and column.
func (t *Tailer) documentError(data []byte, err error) error {
	pe := &ParseError{Path: t.path, Err: err}
	var se *syntaxError
	if errors.As(err, &se) {
		head := data[:se.Offset]
		pe.Offset = int64(se.Offset)
		pe.Line = int64(bytes.Count(head, []byte{'\n'})) + 1
		pe.Column = int64(len(head) - bytes.LastIndexByte(head, '\n'))
		pe.Err = se.Err
	}
	return pe
}
