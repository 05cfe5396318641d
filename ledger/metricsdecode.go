package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// decodeMetrics reads a metrics body. Bodies as canonical() writes them
// are read by a scanner made for that one layout, which is many times
// faster than encoding/json with a method call per point: a checked view
// (Checked), verify and rebuilds replay every metrics entry, and a
// 10,000-step run of 80 keys holds 800,000 points. Any other layout (a
// string with escapes, a number encoding/json would read otherwise) falls
// back to encoding/json, so both routes read every body alike; a test and
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
	s := metricScanner{b: body}
	var m Metrics
	if !s.lit(`{`) {
		return m, false
	}
	if s.lit(`"cursor":`) {
		end := s.objectEnd()
		if end < 0 || json.Unmarshal(s.b[s.i:end], &m.Cursor) != nil || m.Cursor == nil {
			return m, false
		}
		s.i = end
		if !s.lit(`,`) {
			return m, false
		}
	}
	if s.lit(`"format":`) {
		f, ok := s.str()
		if !ok || !utf8.Valid(f) || !s.lit(`,`) {
			return m, false
		}
		m.Format = string(f)
	}
	if !s.lit(`"points":`) {
		return m, false
	}
	switch {
	case s.lit(`null`):
	case s.lit(`[]`):
		m.Points = []MetricPoint{}
	case s.lit(`[`):
		keys := map[string]string{}
		m.Points = make([]MetricPoint, 0, bytes.Count(body[s.i:], []byte("],["))+1)
		for {
			p, ok := s.point(keys)
			if !ok {
				return m, false
			}
			m.Points = append(m.Points, p)
			if s.lit(`]`) {
				break
			}
			if !s.lit(`,`) {
				return m, false
			}
		}
	default:
		return m, false
	}
	if s.lit(`,"source":`) {
		src, ok := s.str()
		if !ok || !utf8.Valid(src) {
			return m, false
		}
		m.Source = string(src)
	}
	return m, s.lit(`}`) && s.i == len(s.b)
}

type metricScanner struct {
	b []byte
	i int
}

// lit consumes tok when the input continues with it.
func (s *metricScanner) lit(tok string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(tok)) {
		s.i += len(tok)
		return true
	}
	return false
}

// str reads a string without escapes or control characters, which is how
// canonical() writes plain keys; anything else is left to encoding/json.
func (s *metricScanner) str() ([]byte, bool) {
	if !s.lit(`"`) {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// numberBytes marks the bytes a JSON number may hold.
var numberBytes = func() (t [256]bool) {
	for _, c := range []byte("-+.0123456789eE") {
		t[c] = true
	}
	return t
}()

// number reads a JSON number's bytes.
func (s *metricScanner) number() []byte {
	start := s.i
	for s.i < len(s.b) && numberBytes[s.b[s.i]] {
		s.i++
	}
	if !jsonNumber(s.b[start:s.i]) {
		return nil
	}
	return s.b[start:s.i]
}

// point reads [step,"key",value|null].
func (s *metricScanner) point(keys map[string]string) (MetricPoint, bool) {
	var p MetricPoint
	if !s.lit(`[`) {
		return p, false
	}
	n := s.number()
	step, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(n), len(n)), 10, 64)
	if n == nil || err != nil || !s.lit(`,`) {
		return p, false
	}
	k, ok := s.str()
	if !ok || !utf8.Valid(k) || !s.lit(`,`) {
		return p, false // encoding/json would replace invalid UTF-8
	}
	key, ok := keys[string(k)] // no allocation for a key seen before
	if !ok {
		key = string(k)
		keys[key] = key
	}
	p.Step, p.Key = step, key
	if s.lit(`null`) {
		p.Value = math.NaN()
	} else {
		n := s.number()
		if n == nil {
			return p, false
		}
		// The string only lives for the call: ParseFloat keeps it only in
		// an error, and an error sends the body to encoding/json.
		if p.Value, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(n), len(n)), 64); err != nil {
			return p, false
		}
	}
	return p, s.lit(`]`)
}

// objectEnd returns the index just past the JSON object starting at s.i,
// or -1.
func (s *metricScanner) objectEnd() int {
	depth, inStr := 0, false
	for j := s.i; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case inStr && c == '\\':
			j++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}

// jsonNumber reports whether b is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
func jsonNumber(b []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
