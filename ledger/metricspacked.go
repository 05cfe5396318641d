package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// PackedMetrics is version 2 of the metrics body (docs/FORMAT.md, "Body
// versions"): a batch's points grouped by key, each key's steps and values
// packed as the derived metrics rows of a SQLite ledger hold them.
// Version 1 (Metrics) writes
// every point as [step,"key",value], about 50 bytes of JSON a point to
// encode, hash, store and parse again; a W&B run of 5 million points made
// 250 MB of it. Packed, a point takes 9 bytes (12 in base64) when steps
// go up by one, and a batch's rows are its arrays as they are (the steps'
// varints, the values' bytes). The body
// holds them itself rather than in a blob, so that the entries alone
// still hold everything the derived tables do, and the chain's hash is
// the only check they need.
type PackedMetrics struct {
	BodyVersion int              `json:"body_version"` // always 2 (PackMetrics sets it)
	Series      []PackedSeries   `json:"series"`
	Source      string           `json:"source,omitempty"`
	Format      string           `json:"format,omitempty"`
	Cursor      map[string]int64 `json:"cursor,omitempty"`
}

// PackedSeries is one key's points of a batch, in the order they were
// logged (a step logged twice keeps both). In memory Steps are
// little-endian int64 and Values little-endian float64, 8 bytes a point
// each; a SQLite ledger's derived rows keep the steps as their varints
// (stepColumn). In JSON both are base64 strings (standard alphabet,
// padded): values as they are, and steps as each step's difference from
// the one before (the first's from 0) in zigzag varints, the encoding
// of Go's binary.AppendVarint, shortest form: steps mostly go up by one,
// and a byte a step instead of eight takes a quarter off a large body. A
// value is as version 1 reads it back: NaN (the bits of math.NaN) for
// NaN and ±Inf, never -0.
type PackedSeries struct {
	Key    string
	Steps  []byte
	Values []byte
}

// packedSeriesJSON is a PackedSeries as JSON holds it.
type packedSeriesJSON struct {
	Key    string `json:"key"`
	Steps  string `json:"steps"`
	Values string `json:"values"`
}

// metricsV2 is how a body of version 2 begins in canonical JSON.
var metricsV2 = []byte(`{"body_version":2,`)

// PackMetrics packs points into a body of version 2: keys in the order
// they first appear, each key's points in the order given. NaN and ±Inf
// become NaN and -0 becomes 0, as version 1 reads them back.
func PackMetrics(pts []MetricPoint) PackedMetrics {
	return PackedMetrics{BodyVersion: 2, Series: packPoints(pts, nil)}
}

// Len is how many points s holds.
func (s PackedSeries) Len() int { return len(s.Steps) / 8 }

// At is s's i-th point.
func (s PackedSeries) At(i int) MetricPoint {
	return MetricPoint{Step: int64(binary.LittleEndian.Uint64(s.Steps[8*i:])), Key: s.Key,
		Value: math.Float64frombits(binary.LittleEndian.Uint64(s.Values[8*i:]))}
}

// packPoints groups points by key into series whose arrays share one
// buffer from alloc (nil: a new one). Keys are numbered by keyOrder,
// which tries the key after the previous point's before the map: a batch
// holds steps of the same keys in the same order.
func packPoints(pts []MetricPoint, alloc func(n int) []byte) []PackedSeries {
	if len(pts) == 0 {
		return nil
	}
	var order keyOrder
	var count []int
	of := make([]int32, len(pts))
	for i, p := range pts {
		k := order.of(p.Key)
		if int(k) == len(count) {
			count = append(count, 0)
		}
		of[i] = k
		count[k]++
	}
	n := 8 * len(pts)
	var pack []byte
	if alloc != nil {
		pack = alloc(2 * n)
	} else {
		pack = make([]byte, 2*n)
	}
	steps, vals := pack[:n:n], pack[n:2*n:2*n]
	series := make([]PackedSeries, len(order.keys))
	at := make([]int, len(order.keys))
	for k, key := range order.keys {
		if k > 0 {
			at[k] = at[k-1] + 8*count[k-1]
		}
		end := at[k] + 8*count[k]
		series[k] = PackedSeries{Key: key, Steps: steps[at[k]:end:end], Values: vals[at[k]:end:end]}
	}
	for i, p := range pts {
		k := of[i]
		binary.LittleEndian.PutUint64(steps[at[k]:], uint64(p.Step))
		binary.LittleEndian.PutUint64(vals[at[k]:], math.Float64bits(asRecorded(p.Value)))
		at[k] += 8
	}
	return series
}

// check reports what makes m a body no writer of version 2 writes: each
// version of a batch has one body, and a reader given another refuses it
// (verify names the entry) rather than guess what it means.
func (m PackedMetrics) check() error {
	if m.BodyVersion != 2 {
		return fmt.Errorf("body_version is %d, want 2 (make the body with ledger.PackMetrics)", m.BodyVersion)
	}
	seen := make(map[string]bool, len(m.Series))
	for _, s := range m.Series {
		if seen[s.Key] {
			return fmt.Errorf("series %q appears twice; a batch holds one series a key", s.Key)
		}
		seen[s.Key] = true
		switch {
		case len(s.Steps) == 0 || len(s.Steps)%8 != 0 || len(s.Values)%8 != 0:
			return fmt.Errorf("series %q: %d bytes of steps and %d of values, want 8 a point and at least one point", s.Key, len(s.Steps), len(s.Values))
		case len(s.Steps) != len(s.Values):
			return fmt.Errorf("series %q: %d steps but %d values", s.Key, len(s.Steps)/8, len(s.Values)/8)
		}
		for i := range s.Len() {
			p := s.At(i)
			if float64(p.Step) > 1<<53 || float64(p.Step) < -(1<<53) {
				return fmt.Errorf("series %q: point %d: step %d is not exactly representable as a float64", s.Key, i, p.Step)
			}
			if math.Float64bits(asRecorded(p.Value)) != math.Float64bits(p.Value) {
				return fmt.Errorf("series %q: point %d: value bits %#016x, which version 1 cannot hold (NaN is %#016x; no ±Inf, no -0)", s.Key, i, math.Float64bits(p.Value), math.Float64bits(math.NaN()))
			}
		}
	}
	return nil
}

// canonical writes m as CanonicalJSON would, directly, after checking it:
// the arrays are encoded in place rather than copied into encoding/json's
// output and parsed again. A test checks the two routes agree byte for
// byte.
//
// NB: the bytes written here are hashed; changing them breaks every ledger.
func (m PackedMetrics) canonical() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	size := 64 + len(m.Source) + len(m.Format)
	for _, s := range m.Series {
		size += 40 + len(s.Key) + base64.StdEncoding.EncodedLen(len(s.Steps)/4) + base64.StdEncoding.EncodedLen(len(s.Values))
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	var varints []byte // each series' steps as JSON holds them, reusing the room
	buf.Write(metricsV2[:len(metricsV2)-1])
	// Keys in sorted order: body_version, cursor, format, series, source.
	if len(m.Cursor) > 0 {
		c, err := CanonicalJSON(m.Cursor)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"cursor":`)
		buf.Write(c)
	}
	if m.Format != "" {
		buf.WriteString(`,"format":`)
		writeCanonicalString(buf, m.Format)
	}
	buf.WriteString(`,"series":`)
	if m.Series == nil {
		buf.WriteString("null") // as encoding/json writes a nil slice
	} else {
		buf.WriteByte('[')
	}
	for i, s := range m.Series {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"key":`)
		writeCanonicalString(buf, s.Key)
		buf.WriteString(`,"steps":"`)
		varints = appendSteps(varints[:0], s.Steps)
		buf.Write(base64.StdEncoding.AppendEncode(buf.AvailableBuffer(), varints))
		buf.WriteString(`","values":"`)
		buf.Write(base64.StdEncoding.AppendEncode(buf.AvailableBuffer(), s.Values))
		buf.WriteString(`"}`)
	}
	if m.Series != nil {
		buf.WriteByte(']')
	}
	if m.Source != "" {
		buf.WriteString(`,"source":`)
		writeCanonicalString(buf, m.Source)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON writes s as canonical() does.
func (s PackedSeries) MarshalJSON() ([]byte, error) {
	return json.Marshal(packedSeriesJSON{Key: s.Key, Steps: base64.StdEncoding.EncodeToString(appendSteps(nil, s.Steps)),
		Values: base64.StdEncoding.EncodeToString(s.Values)})
}

// UnmarshalJSON reads a series as canonical() writes it, as strictly as
// decodeMetrics does (see decodeBase64 and unpackSteps), so that
// encoding/json reads no body that the scanner refuses.
func (s *PackedSeries) UnmarshalJSON(b []byte) error {
	var raw packedSeriesJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	var err error
	s.Key = raw.Key
	if s.Steps, err = decodeSteps([]byte(raw.Steps), nil, nil); err != nil {
		return fmt.Errorf("series %q: steps: %w", raw.Key, err)
	}
	if s.Values, err = decodeBase64([]byte(raw.Values), nil); err != nil {
		return fmt.Errorf("series %q: values: %w", raw.Key, err)
	}
	return nil
}

// appendSteps appends the varints that stand for steps (little-endian
// int64) in JSON to dst.
func appendSteps(dst, steps []byte) []byte {
	prev := int64(0)
	for i := 0; i+8 <= len(steps); i += 8 {
		step := int64(binary.LittleEndian.Uint64(steps[i:]))
		dst = binary.AppendVarint(dst, step-prev)
		prev = step
	}
	return dst
}

// maxStepDelta is more than two steps that check accepts can differ by,
// and little enough that adding it to such a step cannot wrap around
// int64 into another step that check accepts.
const maxStepDelta = 1 << 55

// decodeSteps appends the steps (little-endian int64) that text, the
// base64 of their varints, stands for to dst; scratch is room for the
// varints, reused when large enough.
func decodeSteps(text, dst, scratch []byte) ([]byte, error) {
	enc, err := decodeBase64(text, scratch[:0])
	if err != nil {
		return nil, err
	}
	return decodeVarintSteps(enc, dst)
}

// decodeVarintSteps appends the steps (little-endian int64) that enc, their
// varints as appendSteps writes them, stands for to dst.
func decodeVarintSteps(enc, dst []byte) ([]byte, error) {
	var short [binary.MaxVarintLen64]byte
	prev := int64(0)
	for i := 0; i < len(enc); {
		d, n := binary.Varint(enc[i:])
		switch {
		case n <= 0:
			return nil, fmt.Errorf("the varint at byte %d is cut short or too long", i)
		case binary.PutVarint(short[:], d) != n:
			return nil, fmt.Errorf("the varint at byte %d is not in its shortest form", i)
		case d > maxStepDelta || d < -maxStepDelta:
			return nil, fmt.Errorf("the varint at byte %d is %d, more than two steps can differ", i, d)
		}
		prev += d
		dst = binary.LittleEndian.AppendUint64(dst, uint64(prev))
		i += n
	}
	return dst, nil
}

// strictBase64 refuses padding bits that are not zero, so that an array
// has one encoding; decodeBase64 refuses the line breaks it still skips.
var strictBase64 = base64.StdEncoding.Strict()

// decodeBase64 appends the bytes that text encodes to dst.
func decodeBase64(text, dst []byte) ([]byte, error) {
	if i := bytes.IndexAny(text, "\r\n"); i >= 0 {
		return nil, fmt.Errorf("a line break at byte %d of its base64", i)
	}
	return strictBase64.AppendDecode(dst, text)
}

// DecodeMetrics reads a metrics entry's body, of either version, into its
// series (BodyVersion says which version the body is): the one decoder every reader of metrics bodies goes through
// (the ledger's derived rows, its checked view and verify included).
func DecodeMetrics(body []byte) (PackedMetrics, error) {
	return decodeMetrics(body, nil)
}
