package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Metrics is a batch of scalar points for one run, with where they came
// from: Source and Format name the file, Cursor the position after the
// batch, so ingestion can resume exactly there.
type Metrics struct {
	Points []MetricPoint    `json:"points"`
	Source string           `json:"source,omitempty"`
	Format string           `json:"format,omitempty"`
	Cursor map[string]int64 `json:"cursor,omitempty"`
}

// MetricPoint is one (step, key, value). It encodes as a JSON array
// [step, "key", value] to keep large batches small; a NaN or infinite value,
// which JSON cannot hold, is written as null and reads back as NaN.
type MetricPoint struct {
	Step  int64
	Key   string
	Value float64
}

// MarshalJSON writes [step, key, value|null].
func (p MetricPoint) MarshalJSON() ([]byte, error) {
	var v any = p.Value
	if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		v = nil
	}
	return json.Marshal([]any{p.Step, p.Key, v})
}

// UnmarshalJSON reads [step, key, value|null].
func (p *MetricPoint) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 3 {
		return fmt.Errorf("metric point %s: want [step, key, value]", b)
	}
	if err := json.Unmarshal(raw[0], &p.Step); err != nil {
		return fmt.Errorf("metric point %s: step: %w", b, err)
	}
	if err := json.Unmarshal(raw[1], &p.Key); err != nil {
		return fmt.Errorf("metric point %s: key: %w", b, err)
	}
	var v *float64
	if err := json.Unmarshal(raw[2], &v); err != nil {
		return fmt.Errorf("metric point %s: value: %w", b, err)
	}
	p.Value = math.NaN()
	if v != nil {
		p.Value = *v
	}
	return nil
}

// canonicalBody is a body that writes its canonical JSON itself, which
// Append uses instead of the generic route: metrics batches, of both
// versions, hold up to millions of points.
type canonicalBody interface {
	canonical() ([]byte, error)
}

// canonical writes m as CanonicalJSON would, directly: a batch of a
// million points takes a fraction of the generic route's time. A test
// checks the two agree byte for byte.
//
// NB: the bytes written here are hashed; changing them breaks every ledger.
func (m Metrics) canonical() ([]byte, error) {
	size := 64 + len(m.Source)
	for _, p := range m.Points {
		size += len(p.Key) + 48 // [step,"key",value] with room for 24-digit numbers
	}
	// A new slice rather than Grow, which clears all of it first: the
	// room left unused is then never touched.
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteByte('{')
	first := true
	field := func(name string) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		writeCanonicalString(buf, name)
		buf.WriteByte(':')
	}
	// Keys in sorted order: cursor, format, points, source.
	if len(m.Cursor) > 0 {
		field("cursor")
		c, err := CanonicalJSON(m.Cursor)
		if err != nil {
			return nil, err
		}
		buf.Write(c)
	}
	if m.Format != "" {
		field("format")
		writeCanonicalString(buf, m.Format)
	}
	field("points")
	if m.Points == nil {
		buf.WriteString("null") // as encoding/json writes a nil slice
	} else {
		buf.WriteByte('[')
	}
	for i, p := range m.Points {
		if float64(p.Step) > 1<<53 || float64(p.Step) < -(1<<53) {
			return nil, fmt.Errorf("metric point %d: step %d is not exactly representable as a float64", i, p.Step)
		}
		// Numbers are appended in place (buf was made to fit): a batch
		// formats millions of them.
		b := buf.AvailableBuffer()
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, p.Step, 10)
		b = append(b, ',')
		buf.Write(b)
		writeCanonicalString(buf, p.Key)
		b = append(buf.AvailableBuffer(), ',')
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			b = append(b, "null"...)
		} else {
			b = appendES6(b, p.Value)
		}
		b = append(b, ']')
		buf.Write(b)
	}
	if m.Points != nil {
		buf.WriteByte(']')
	}
	if m.Source != "" {
		field("source")
		writeCanonicalString(buf, m.Source)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// deriveMetrics writes one row per key of a metrics entry: its steps and
// values packed as the body of version 2 holds them. typed is the body as
// the appender gave it, or nil: then the body is decoded, either version.
// The arrays of a large batch decoded, or packed from version 1, go into
// the deriver's buffer, reused from batch to batch, and its rows are
// written at once, before the next batch overwrites them: a replay of
// millions of points touches no new memory for them.
func (d *deriver) deriveMetrics(e *Entry, typed any) (err error) {
	if e.Run == "" {
		return fmt.Errorf("%w: metrics need a run id", ErrBadRecord)
	}
	reused := false
	alloc := func(n int) []byte {
		if n < packReuse {
			return make([]byte, n)
		}
		reused = true
		if cap(d.pack) < n {
			d.pack = make([]byte, n)
		}
		return d.pack[:n]
	}
	var m PackedMetrics
	switch b := typed.(type) {
	case PackedMetrics:
		m = b // checked by canonical() when it was encoded
	case Metrics:
		m.Series = packPoints(b.Points, alloc)
	default:
		if m, err = decodeMetrics(e.Body, alloc); err != nil {
			return fmt.Errorf("%w: %s body: %v", ErrBadRecord, e.Kind, err)
		}
	}
	if reused {
		defer func() {
			if err == nil {
				err = d.flush()
			}
		}()
	}
	for _, s := range m.Series {
		steps := s.Steps
		if d.deltas {
			steps = appendSteps(make([]byte, 0, len(steps)/8+8), steps)
		}
		// By position: the steps' column is named by the table's backend
		// (stepColumn), while their layout is the ledger's, which a
		// PostgreSQL ledger's verify derives into a SQLite scratch table.
		d.later("metrics", e.Run, s.Key, e.Seq, s.Len(), steps, s.Values)
	}
	return nil
}

// stepColumn names the column of a metrics row that holds its steps: in a
// SQLite ledger step_deltas, each step's difference from the one before as
// a varint (the bytes of a version 2 body's steps), since derived version
// 3; in a PostgreSQL ledger steps, little-endian int64.
func stepColumn(pg bool) string {
	if pg {
		return "steps"
	}
	return "step_deltas"
}

// packReuse is the size from which a batch's packed rows go through the
// deriver's reused buffer.
const packReuse = 256 << 10

// asRecorded maps a value to what its JSON form reads back as: ±Inf and NaN
// are null (NaN), -0 is 0. Derived rows must equal what a replay of the
// entries gives, and verify checks that they do.
func asRecorded(v float64) float64 {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return math.NaN()
	case v == 0:
		return 0
	}
	return v
}

// Series returns one metric key of one run in step order (a step logged
// twice keeps both, in ledger order), with the seq of the entry behind
// each point.
func (l *Ledger) Series(ctx context.Context, run, key string) ([]MetricPoint, []int64, error) {
	if l.chk != nil {
		pts, seqs, err := l.checkedSeries(ctx, run, key)
		if err != nil {
			return nil, nil, err
		}
		sp, ss := byStep(pts, seqs)
		return sp, ss, nil
	}
	rows, err := l.db.QueryContext(ctx, "SELECT seq, n, "+stepColumn(l.pg)+", vals FROM metrics WHERE run = ? AND key = ? ORDER BY seq", run, key)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var pts []MetricPoint
	var seqs []int64
	var decoded []byte
	for rows.Next() {
		var seq int64
		var n int
		var steps, vals []byte
		if err := rows.Scan(&seq, &n, &steps, &vals); err != nil {
			return nil, nil, err
		}
		var bad error
		if !l.pg {
			decoded, bad = decodeVarintSteps(steps, decoded[:0])
			steps = decoded
		}
		if bad != nil || len(steps) != 8*n || len(vals) != 8*n {
			return nil, nil, fmt.Errorf("series %s/%s: entry %d: packed row is damaged (run rlgate verify)", run, key, seq)
		}
		for i := range n {
			pts = append(pts, MetricPoint{Step: int64(binary.LittleEndian.Uint64(steps[8*i:])), Key: key,
				Value: math.Float64frombits(binary.LittleEndian.Uint64(vals[8*i:]))})
			seqs = append(seqs, seq)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	sp, ss := byStep(pts, seqs)
	return sp, ss, nil
}

// byStep sorts a series, with the seqs behind its points, by step,
// keeping ledger order within a step.
func byStep(pts []MetricPoint, seqs []int64) ([]MetricPoint, []int64) {
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return pts[idx[a]].Step < pts[idx[b]].Step })
	sp, ss := make([]MetricPoint, len(pts)), make([]int64, len(pts))
	for i, j := range idx {
		sp[i], ss[i] = pts[j], seqs[j]
	}
	return sp, ss
}

// MetricKeys returns the metric keys a run recorded, sorted.
func (l *Ledger) MetricKeys(ctx context.Context, run string) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, "SELECT DISTINCT key FROM metrics WHERE run = ? ORDER BY key", run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
