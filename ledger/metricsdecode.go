package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unsafe"
)

// decodeMetrics reads a metrics body. Bodies as canonical() writes them
// are read by a scanner made for that one layout, which is many times
// faster than encoding/json with a method call per point: a checked view
// (Checked), verify and rebuilds replay every metrics entry, and a
// 10,000-step run of 80 keys holds 800,000 points. Any other layout (a
// number encoding/json would read otherwise, another order) falls back to
// encoding/json, so both routes read every body alike; a test and
// a fuzz target check that they agree.
func decodeMetrics(body []byte) (Metrics, error) {
	if m, ok := scanMetrics(body); ok {
		return m, nil
	}
	var m Metrics
	if err := json.Unmarshal(body, &m); err != nil {
		return Metrics{}, err
	}
	return m, nil
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
