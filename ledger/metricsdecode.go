package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"

	"github.com/rlgate/rlgate/ledger/records"
)

// decodeMetrics reads a metrics body of either version into its series,
// whose arrays lie in memory from alloc (nil: new memory), with the
// body's version in BodyVersion, and refuses a version this build does
// not read. Bodies of either version as
// canonical() writes them are read by a scanner made for that one layout,
// which is many times faster than encoding/json: a checked view
// (Checked), verify and rebuilds replay every metrics entry, and a
// 10,000-step run of 80 keys holds 800,000 points. Any other layout (a
// number encoding/json would read otherwise, another order) falls back to
// encoding/json, so both routes read every body alike; a test and a fuzz
// target check that they agree.
func decodeMetrics(body []byte, alloc func(n int) []byte) (PackedMetrics, error) {
	if bytes.HasPrefix(body, metricsV2) {
		if m, ok := scanPacked(body, alloc); ok {
			return m, m.check()
		}
	} else if m, ok := scanMetrics(body); ok {
		return fromVersion1(m, alloc), nil
	}
	return decodeMetricsJSON(body, alloc)
}

// fromVersion1 is a body of version 1 as its series, its BodyVersion 1.
func fromVersion1(m Metrics, alloc func(n int) []byte) PackedMetrics {
	return PackedMetrics{BodyVersion: 1, Series: packPoints(m.Points, alloc), Source: m.Source, Format: m.Format, Cursor: m.Cursor}
}

// decodeMetricsJSON reads a metrics body with encoding/json, as
// decodeMetrics does every body its scanners leave.
func decodeMetricsJSON(body []byte, alloc func(n int) []byte) (PackedMetrics, error) {
	v, err := records.BodyVersion(body)
	if err != nil {
		return PackedMetrics{}, err
	}
	switch v {
	case 1:
		var m Metrics
		if err := json.Unmarshal(body, &m); err != nil {
			return PackedMetrics{}, err
		}
		return fromVersion1(m, alloc), nil
	case 2:
		var m PackedMetrics
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields() // a field of a later version is not skipped
		if err := dec.Decode(&m); err != nil {
			return PackedMetrics{}, err
		}
		if _, err := dec.Token(); err != io.EOF {
			return PackedMetrics{}, fmt.Errorf("trailing data after the body")
		}
		return m, m.check()
	}
	return PackedMetrics{}, fmt.Errorf("the body is version %d of %s, which this build of rlgate does not read (it reads versions %v); read this ledger with a newer rlgate",
		v, records.KindMetrics, records.Versions(records.KindMetrics))
}

// scanPacked reads a body of version 2 in canonical() layout, its arrays
// into one buffer from alloc, and reports false for any other layout or
// an array that decodeBase64 refuses (encoding/json then says why).
func scanPacked(body []byte, alloc func(n int) []byte) (PackedMetrics, bool) {
	m := PackedMetrics{BodyVersion: 2}
	s := CanonicalScanner{B: body, I: len(metricsV2)}
	if s.Lit(`"cursor":`) {
		end := s.ObjectEnd()
		if end < 0 || json.Unmarshal(s.B[s.I:end], &m.Cursor) != nil || m.Cursor == nil {
			return m, false
		}
		s.I = end
		if !s.Lit(`,`) {
			return m, false
		}
	}
	if s.Lit(`"format":`) {
		f, ok := s.Str()
		if !ok || !s.Lit(`,`) {
			return m, false
		}
		m.Format = string(f)
	}
	if !s.Lit(`"series":`) {
		return m, false
	}
	switch {
	case s.Lit(`null`):
	case s.Lit(`[]`):
		m.Series = []PackedSeries{}
	case s.Lit(`[`):
		// The texts first: they say how many bytes the arrays take.
		type texts struct{ key, steps, values []byte }
		var ts []texts
		for {
			var t texts
			var ok bool
			if !s.Lit(`{"key":`) {
				return m, false
			}
			if t.key, ok = s.Str(); !ok || !s.Lit(`,"steps":`) {
				return m, false
			}
			if t.steps, ok = s.Str(); !ok || !s.Lit(`,"values":`) {
				return m, false
			}
			if t.values, ok = s.Str(); !ok || !s.Lit(`}`) {
				return m, false
			}
			ts = append(ts, t)
			if s.Lit(`]`) {
				break
			}
			if !s.Lit(`,`) {
				return m, false
			}
		}
		n, most := 0, 0
		for _, t := range ts {
			n += base64.StdEncoding.DecodedLen(len(t.values))
			most = max(most, len(t.steps))
		}
		var pack []byte
		if alloc != nil {
			pack = alloc(2 * n)
		} else {
			pack = make([]byte, 2*n)
		}
		// A malformed body may hold more steps than values: appending
		// past a region's end then moves those steps elsewhere.
		steps, vals := pack[:0:n], pack[n:n:2*n]
		scratch := make([]byte, 0, base64.StdEncoding.DecodedLen(most))
		m.Series = make([]PackedSeries, len(ts))
		for i, t := range ts {
			var err error
			at := len(steps)
			if steps, err = decodeSteps(t.steps, steps, scratch); err != nil {
				return m, false
			}
			m.Series[i].Steps = steps[at:len(steps):len(steps)]
			at = len(vals)
			if vals, err = decodeBase64(t.values, vals); err != nil {
				return m, false
			}
			m.Series[i].Values = vals[at:len(vals):len(vals)]
			m.Series[i].Key = string(t.key)
		}
	default:
		return m, false
	}
	if s.Lit(`,"source":`) {
		src, ok := s.Str()
		if !ok {
			return m, false
		}
		m.Source = string(src)
	}
	return m, s.Lit(`}`) && s.Done()
}

// scanMetrics reads body in canonical() layout, and reports false for any
// other layout.
func scanMetrics(body []byte) (Metrics, bool) {
	var ms metricsScan
	ok := ms.scan(body, func(n int) { ms.Points = make([]MetricPoint, 0, n) }, func(step int64, key int32, num []byte) bool {
		v, ok := parseValue(num)
		ms.Points = append(ms.Points, MetricPoint{Step: step, Key: ms.keys.keys[key], Value: v})
		return ok
	})
	return ms.Metrics, ok
}

// parseValue is a point's value from its number as the body writes it,
// or NaN for null (num is nil).
func parseValue(num []byte) (float64, bool) {
	if num == nil {
		return math.NaN(), true
	}
	// The string only lives for the call: ParseFloat keeps it only in an
	// error, and an error sends the body to encoding/json.
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
	return v, err == nil
}

// metricsScan reads a canonical metrics body point by point, so that
// scanMetrics can parse every value and a checked view only the values of
// the keys asked for (checkedSeries).
type metricsScan struct {
	Metrics // all but the points, which are the caller's
	keys    keyOrder
}

// scan reads body in canonical() layout: it calls start with how many
// points there are (not at all for "points":null), then point for each
// with its step, its key's number in m.keys and its value as the body
// writes it (nil for null; a valid JSON number otherwise). It is false for
// any other layout, or as soon as point is.
func (m *metricsScan) scan(body []byte, start func(n int), point func(step int64, key int32, num []byte) bool) bool {
	s := CanonicalScanner{B: body}
	if !s.Lit(`{`) {
		return false
	}
	if s.Lit(`"cursor":`) {
		end := s.ObjectEnd()
		if end < 0 || json.Unmarshal(s.B[s.I:end], &m.Cursor) != nil || m.Cursor == nil {
			return false
		}
		s.I = end
		if !s.Lit(`,`) {
			return false
		}
	}
	if s.Lit(`"format":`) {
		f, ok := s.Str()
		if !ok || !s.Lit(`,`) {
			return false
		}
		m.Format = string(f)
	}
	if !s.Lit(`"points":`) {
		return false
	}
	switch {
	case s.Lit(`null`):
	case s.Lit(`[]`):
		start(0)
	case s.Lit(`[`):
		start(bytes.Count(body[s.I:], []byte("],[")) + 1)
		for {
			if !m.point(&s, point) {
				return false
			}
			if s.Lit(`]`) {
				break
			}
			if !s.Lit(`,`) {
				return false
			}
		}
	default:
		return false
	}
	if s.Lit(`,"source":`) {
		src, ok := s.Str()
		if !ok {
			return false
		}
		m.Source = string(src)
	}
	return s.Lit(`}`) && s.Done()
}

// point reads [step,"key",value|null] and hands it to fn.
func (m *metricsScan) point(s *CanonicalScanner, fn func(step int64, key int32, num []byte) bool) bool {
	if !s.Lit(`[`) {
		return false
	}
	step, ok := s.Int()
	if !ok || !s.Lit(`,`) {
		return false
	}
	k, ok := s.Str()
	if !ok || !s.Lit(`,`) {
		return false
	}
	key := m.keys.ofBytes(k)
	var num []byte
	if !s.Lit(`null`) {
		if num = s.Number(); num == nil {
			return false
		}
	}
	return fn(step, key, num) && s.Lit(`]`)
}

// keyOrder numbers the keys of metric points in the order they first
// appear, and interns them. A trainer logs the same keys in the same
// order at every step, so the key after the last one looked up is tried
// before the map: a run of 800,000 points costs a few dozen map look-ups.
type keyOrder struct {
	index map[string]int32
	keys  []string
	last  int32
}

// of numbers k.
func (o *keyOrder) of(k string) int32 {
	if i := o.next(); i >= 0 && o.keys[i] == k {
		o.last = i
		return i
	}
	return o.add(k)
}

// ofBytes numbers k, allocating its string only when it is new.
func (o *keyOrder) ofBytes(k []byte) int32 {
	if i := o.next(); i >= 0 && o.keys[i] == string(k) {
		o.last = i
		return i
	}
	if i, ok := o.index[string(k)]; ok {
		o.last = i
		return i
	}
	return o.add(string(k))
}

// next is the key after the last one looked up, or -1 before the first.
func (o *keyOrder) next() int32 {
	if len(o.keys) == 0 {
		return -1
	}
	if i := o.last + 1; int(i) < len(o.keys) {
		return i
	}
	return 0
}

// add numbers k from the map, adding it when it is new.
func (o *keyOrder) add(k string) int32 {
	i, ok := o.index[k]
	if !ok {
		if o.index == nil {
			o.index = map[string]int32{}
		}
		i = int32(len(o.keys))
		o.index[k] = i
		o.keys = append(o.keys, k)
	}
	o.last = i
	return i
}
