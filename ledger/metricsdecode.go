package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
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
func decodeMetrics(body []byte) (Metrics, error) { return decodeMetricsKey(body, "") }

// decodeMetricsKey is decodeMetrics keeping only the points of key (all
// of them when key is ""): the scanner skips the others' values unread.
func decodeMetricsKey(body []byte, key string) (Metrics, error) {
	if m, ok := scanMetrics(body, key); ok {
		return m, nil
	}
	var m Metrics
	if err := json.Unmarshal(body, &m); err != nil {
		return Metrics{}, err
	}
	if key != "" {
		m.Points = slices.DeleteFunc(m.Points, func(p MetricPoint) bool { return p.Key != key })
	}
	return m, nil
}

// scanMetrics reads body in canonical() layout, keeping the points of
// only (all when only is ""), and reports false for any other layout.
func scanMetrics(body []byte, only string) (Metrics, bool) {
	s := metricScanner{b: body}
	if only != "" {
		s.only = []byte(only)
	}
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
		m.Points = []MetricPoint{}
		if only == "" {
			m.Points = make([]MetricPoint, 0, bytes.Count(body[s.i:], []byte("],["))+1)
		}
		for {
			p, keep, ok := s.point(keys)
			if !ok {
				return m, false
			}
			if keep {
				m.Points = append(m.Points, p)
			}
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
	b    []byte
	i    int
	only []byte // the one key to keep; nil: every key
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

// number reads a JSON number's bytes.
func (s *metricScanner) number() []byte {
	start := s.i
	for s.i < len(s.b) && bytes.IndexByte([]byte("-+.0123456789eE"), s.b[s.i]) >= 0 {
		s.i++
	}
	if !jsonNumber(s.b[start:s.i]) {
		return nil
	}
	return s.b[start:s.i]
}

// point reads [step,"key",value|null], and says whether the scanner keeps
// it. A point of another key than only is checked for its shape alone:
// its number bytes must be JSON's, and the values of the points kept are
// parsed exactly as encoding/json parses them.
func (s *metricScanner) point(keys map[string]string) (MetricPoint, bool, bool) {
	var p MetricPoint
	if !s.lit(`[`) {
		return p, false, false
	}
	n := s.number()
	step, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(n), len(n)), 10, 64)
	if n == nil || err != nil || !s.lit(`,`) {
		return p, false, false
	}
	k, ok := s.str()
	if !ok || !utf8.Valid(k) || !s.lit(`,`) {
		return p, false, false // encoding/json would replace invalid UTF-8
	}
	if s.only != nil && !bytes.Equal(k, s.only) {
		if !s.lit(`null`) && s.number() == nil {
			return p, false, false
		}
		return p, false, s.lit(`]`)
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
			return p, false, false
		}
		// The string only lives for the call: ParseFloat keeps it only in
		// an error, and an error sends the body to encoding/json.
		if p.Value, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(n), len(n)), 64); err != nil {
			return p, false, false
		}
	}
	return p, true, s.lit(`]`)
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
