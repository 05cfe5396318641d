package metrics

// Point is one logged value: the trainer's key, unchanged, at a step.
// Value may be NaN or ±Inf when the trainer logged one (a diverged loss is
// evidence too); whoever stores points must encode those.
type Point struct {
	Step  int64
	Key   string
	Value float64
}

// Stats counts what a parse kept and what it passed over, so that a report
// can say "1,204 points, 3 non-numeric values skipped" instead of silently
// dropping data. Counts accumulate over a Tailer's life.
type Stats struct {
	// Records is the number of step records read: JSONL lines, console step
	// lines, TensorBoard events with a summary, TRL log_history entries.
	Records int64 `json:"records"`
	// Points is the number of points produced.
	Points int64 `json:"points"`
	// Skipped counts values that are not numbers: strings, bools, nulls,
	// arrays, non-scalar tensors, console pairs without a number.
	Skipped int64 `json:"skipped"`
	// Duplicates counts keys repeated within one record (a console line
	// redrawn after a carriage return is the same record); the last value is
	// kept (see the package documentation).
	Duplicates int64 `json:"duplicates"`
	// Ignored counts input that carries no step record: console lines that
	// are not step lines, blank lines, TensorBoard events without a summary.
	Ignored int64 `json:"ignored"`
	// PendingBytes is how many bytes after the cursor were left unparsed by
	// the latest read: a partial last line, a truncated last TensorBoard
	// record, or a TRL document caught mid-write.
	PendingBytes int64 `json:"pending_bytes"`
}

// sink collects the points of the record being parsed. Records are built in
// place at the end of out so that a record's step can be set once it is
// known (TRL writes "step" last) and a failed record can be dropped whole.
type sink struct {
	out   []Point
	keys  keyTable
	stats Stats
	start int // index in out where the current record begins
	// With flush, committed points leave out in chunks of chunk points
	// (see Tailer.Stream).
	flush func([]Point)
	chunk int
}

// begin starts a record.
func (s *sink) begin() {
	s.start = len(s.out)
	s.keys.next()
}

// add appends key=v to the current record or, when key was already seen in
// it, overwrites that value: the last write wins.
func (s *sink) add(key []byte, v float64) {
	e, fresh := s.keys.intern(key)
	if !fresh {
		s.stats.Duplicates++
		s.out[e.at].Value = v
		return
	}
	e.at = len(s.out)
	s.out = append(s.out, Point{Key: e.name, Value: v})
}

// commit ends the current record at step.
func (s *sink) commit(step int64) {
	for i := s.start; i < len(s.out); i++ {
		s.out[i].Step = step
	}
	s.stats.Records++
	s.stats.Points += int64(len(s.out) - s.start)
	if s.flush != nil && len(s.out) >= s.chunk {
		n := len(s.out) / s.chunk * s.chunk
		for i := 0; i < n; i += s.chunk {
			s.flush(s.out[i : i+s.chunk])
		}
		s.out = s.out[:copy(s.out, s.out[n:])]
		s.start = len(s.out)
	}
}

// drop discards the current record.
func (s *sink) drop() { s.out = s.out[:s.start] }

// keyTable interns key strings, so 10,000 steps of the same 80 keys cost 80
// string allocations, and spots keys repeated within a record by stamping
// each key with the generation of the record that last used it.
//
// Trackers and trainers log the same keys in the same order every step, so
// a key is first compared with the one at its place in the previous record
// (last): one comparison of bytes instead of hashing the key for the map,
// which is most of a point's cost in a large run.
type keyTable struct {
	m          map[string]*keyEntry
	gen        uint64
	last, this []*keyEntry // the previous and the current record's keys, in order
}

type keyEntry struct {
	name string
	gen  uint64
	at   int // index in sink.out of the key's point in record gen
}

// next starts a record.
func (t *keyTable) next() {
	t.gen++
	if len(t.this) > 0 {
		t.last, t.this = t.this, t.last[:0]
	}
}

// intern returns the entry for b and whether b is new in the current
// record.
func (t *keyTable) intern(b []byte) (*keyEntry, bool) {
	var e *keyEntry
	if i := len(t.this); i < len(t.last) && t.last[i].name == string(b) {
		e = t.last[i]
	} else if e = t.m[string(b)]; e == nil {
		if t.m == nil {
			t.m = make(map[string]*keyEntry)
		}
		e = &keyEntry{name: string(b), gen: t.gen}
		t.m[e.name] = e
		t.this = append(t.this, e)
		return e, true
	}
	t.this = append(t.this, e)
	if e.gen == t.gen {
		return e, false
	}
	e.gen = t.gen
	return e, true
}
