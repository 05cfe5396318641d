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
	s := CanonicalScanner{B: body}
	var m Metrics
	if !s.Lit(`{`) {
		return m, false
	}
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
	if !s.Lit(`"points":`) {
		return m, false
	}
	switch {
	case s.Lit(`null`):
	case s.Lit(`[]`):
		m.Points = []MetricPoint{}
	case s.Lit(`[`):
		var keys keyOrder
		m.Points = make([]MetricPoint, 0, bytes.Count(body[s.I:], []byte("],["))+1)
		for {
			p, ok := point(&s, &keys)
			if !ok {
				return m, false
			}
			m.Points = append(m.Points, p)
			if s.Lit(`]`) {
				break
			}
			if !s.Lit(`,`) {
				return m, false
			}
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

// point reads [step,"key",value|null].
func point(s *CanonicalScanner, keys *keyOrder) (MetricPoint, bool) {
	var p MetricPoint
	if !s.Lit(`[`) {
		return p, false
	}
	step, ok := s.Int()
	if !ok || !s.Lit(`,`) {
		return p, false
	}
	k, ok := s.Str()
	if !ok || !s.Lit(`,`) {
		return p, false
	}
	p.Step, p.Key = step, keys.keys[keys.ofBytes(k)]
	if s.Lit(`null`) {
		p.Value = math.NaN()
	} else {
		n := s.Number()
		if n == nil {
			return p, false
		}
		// The string only lives for the call: ParseFloat keeps it only in
		// an error, and an error sends the body to encoding/json.
		var err error
		if p.Value, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(n), len(n)), 64); err != nil {
			return p, false
		}
	}
	return p, s.Lit(`]`)
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
