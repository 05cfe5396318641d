package ledger

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// CanonicalScanner reads JSON in the one layout canonical() writes: keys
// in order, no spaces. It serves the few bodies that are
// read in bulk on every decision (metrics points, episode references),
// where encoding/json would cost more than the rest of the decision. Each
// method reports false for anything else, and the caller then decodes the
// body with encoding/json instead, so both routes read every body alike
// (each such caller has a fuzz target that checks it).
type CanonicalScanner struct {
	B []byte // the body
	I int    // where the next read starts
}

// Lit consumes tok when the input continues with it.
func (s *CanonicalScanner) Lit(tok string) bool {
	if bytes.HasPrefix(s.B[s.I:], []byte(tok)) {
		s.I += len(tok)
		return true
	}
	return false
}

// Str reads a string. A plain one (valid UTF-8, no escapes), which is
// how canonical() writes most, is returned as the body's own bytes; one
// with escapes or invalid UTF-8 is decoded by encoding/json, which
// unescapes it and replaces what is not UTF-8, into new bytes.
func (s *CanonicalScanner) Str() ([]byte, bool) {
	if !s.Lit(`"`) {
		return nil, false
	}
	start, escaped := s.I, false
	for ; s.I < len(s.B); s.I++ {
		switch c := s.B[s.I]; {
		case c == '"':
			s.I++
			str := s.B[start : s.I-1]
			if !escaped && utf8.Valid(str) {
				return str, true
			}
			var out string
			if json.Unmarshal(s.B[start-1:s.I], &out) != nil {
				return nil, false
			}
			return []byte(out), true
		case c == '\\':
			escaped = true
			s.I++ // the escaped byte cannot end the string
		case c < 0x20:
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

// Number reads a JSON number's bytes; nil when there is none.
func (s *CanonicalScanner) Number() []byte {
	start := s.I
	for s.I < len(s.B) && numberBytes[s.B[s.I]] {
		s.I++
	}
	if !jsonNumber(s.B[start:s.I]) {
		return nil
	}
	return s.B[start:s.I]
}

// Int reads a number as encoding/json reads it into an int64: an integer
// literal in range (a fraction or an exponent sends the body to
// encoding/json, which refuses it).
func (s *CanonicalScanner) Int() (int64, bool) {
	n := s.Number()
	if n == nil {
		return 0, false
	}
	// The string only lives for the call: ParseInt keeps it only in an
	// error, and an error sends the body to encoding/json.
	v, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(n), len(n)), 10, 64)
	return v, err == nil
}

// Done reports whether the whole body was read.
func (s *CanonicalScanner) Done() bool { return s.I == len(s.B) }

// ObjectEnd returns the index just past the JSON object starting at s.I,
// or -1.
func (s *CanonicalScanner) ObjectEnd() int {
	depth, inStr := 0, false
	for j := s.I; j < len(s.B); j++ {
		c := s.B[j]
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
