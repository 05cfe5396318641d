package metrics

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/rlgate/rlgate/ledger"
)

// errJSONEnd is returned by the scanner when the input stops inside a value.
// A whole-document reader treats it as "the writer is not done yet".
var errJSONEnd = errors.New("unexpected end of JSON input")

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 256

// jsonScanner walks JSON as Python's json module writes it: RFC 8259 plus
// the NaN, Infinity and -Infinity literals that json.dumps emits by default
// (a diverged loss in trainer_state.json or a veRL file log is written that
// way, and encoding/json would reject the whole file). It decodes in place
// without building maps, which keeps a 30 MB veRL log well under a second.
type jsonScanner struct {
	data []byte
	pos  int
	str  []byte // scratch for strings with escapes
	path []byte // scratch for nested keys joined with "/"
}

func (s *jsonScanner) reset(data []byte) {
	s.data = data
	s.pos = 0
}

// syntaxError describes a fault at an offset in the scanned bytes; the
// reader turns the offset into a line and column.
type syntaxError struct {
	Offset int
	Err    error
}

func (e *syntaxError) Error() string { return e.Err.Error() }
func (e *syntaxError) Unwrap() error { return e.Err }

func (s *jsonScanner) errorf(format string, args ...any) error {
	return &syntaxError{Offset: s.pos, Err: fmt.Errorf(format, args...)}
}

// eof reports that the input ended inside a value.
func (s *jsonScanner) eof() error {
	s.pos = len(s.data)
	return &syntaxError{Offset: s.pos, Err: errJSONEnd}
}

// unexpected reports the byte at pos, or errJSONEnd at the end of input.
func (s *jsonScanner) unexpected(context string) error {
	if s.pos >= len(s.data) {
		return s.eof()
	}
	return s.errorf("invalid character %q %s", s.data[s.pos], context)
}

func (s *jsonScanner) skipSpace() { s.pos = ledger.SkipSpace(s.data, s.pos) }

// expectEnd fails unless only white space remains.
func (s *jsonScanner) expectEnd() error {
	s.skipSpace()
	if s.pos < len(s.data) {
		return s.unexpected("after top-level value")
	}
	return nil
}

// object calls member for each key of the object at pos; member must consume
// the value (with value, number or skip). The key is valid until the next
// call.
func (s *jsonScanner) object(member func(key []byte) error) error {
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return s.unexpected("looking for beginning of object")
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.skipSpace()
		key, err := s.string()
		if err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.unexpected("after object key")
		}
		s.pos++
		if err := member(key); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.eof()
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.unexpected("after object value")
		}
	}
}

// array calls elem for each element of the array at pos; elem must consume
// the element.
func (s *jsonScanner) array(elem func() error) error {
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '[' {
		return s.unexpected("looking for beginning of array")
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.eof()
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.unexpected("after array element")
		}
	}
}

// peek returns the first byte of the next value, or 0 at the end of input.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// number consumes a value and reports whether it was numeric (a JSON number
// or one of Python's non-finite literals). Anything else is skipped.
func (s *jsonScanner) number() (float64, bool, error) {
	switch c := s.peek(); {
	case c == '-' || c >= '0' && c <= '9' || c == 'N' || c == 'I':
		v, err := s.float()
		return v, err == nil, err
	default:
		return 0, false, s.skip(0)
	}
}

// float consumes a number or non-finite literal.
func (s *jsonScanner) float() (float64, error) {
	tok, err := s.numberToken()
	if err != nil {
		return 0, err
	}
	switch string(tok) {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, s.errorf("bad number %q", tok)
	}
	// Out of range: Python reads 1e999 as inf too, and ParseFloat returned ±Inf.
	return v, nil
}

// integer consumes a number that must be integral, for steps.
func (s *jsonScanner) integer() (int64, error) {
	s.skipSpace()
	start := s.pos
	tok, err := s.numberToken()
	if err != nil {
		return 0, err
	}
	if n, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
		return n, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		s.pos = start
		return 0, s.errorf("step %q is not an integer", tok)
	}
	return int64(v), nil
}

// numberToken consumes and returns one number token, checked against the
// JSON grammar, or NaN, Infinity, -Infinity.
func (s *jsonScanner) numberToken() ([]byte, error) {
	s.skipSpace()
	start := s.pos
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	if i < len(d) && (d[i] == 'N' && i == start || d[i] == 'I') {
		lit := "Infinity"
		if d[i] == 'N' {
			lit = "NaN" // Python writes no -NaN
		}
		ok, err := s.literal(i, lit)
		if err != nil {
			return nil, err
		}
		if ok {
			s.pos = i + len(lit)
			return d[start:s.pos], nil
		}
	}
	digits := func() int {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() > 0:
	default:
		s.pos = i
		return nil, s.unexpected("in number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			s.pos = i
			return nil, s.unexpected("after decimal point in number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.pos = i
			return nil, s.unexpected("in exponent of number")
		}
	}
	s.pos = i
	return d[start:i], nil
}

// string consumes a string and returns its decoded bytes, valid until the
// next call. Invalid UTF-8 and lone surrogates become U+FFFD, as
// encoding/json does.
func (s *jsonScanner) string() ([]byte, error) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, s.unexpected("looking for beginning of string")
	}
	s.pos++
	start := s.pos
	ascii := true
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			b := s.data[start:i]
			if !ascii && !utf8.Valid(b) {
				s.str, _ = ledger.AppendUnescaped(s.str[:0], b)
				return s.str, nil
			}
			return b, nil
		case c == '\\':
			s.pos = i
			return s.escapedString(start)
		case c < 0x20:
			s.pos = i
			return nil, s.errorf("invalid character %q in string", c)
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, s.eof()
}

// escapedString finishes a string that contains escapes, decoded by
// ledger.AppendUnescaped; start is at the first byte of the string's
// content. An escape cut short by the end of the input is errJSONEnd (the
// writer is not done yet); one that is wrong is a syntax error at it.
func (s *jsonScanner) escapedString(start int) ([]byte, error) {
	d := s.data
	out, n := ledger.AppendUnescaped(s.str[:0], d[start:])
	s.str = out
	s.pos = start + n
	if s.pos == len(d) {
		return nil, s.eof()
	}
	switch c := d[s.pos]; {
	case c == '"':
		s.pos++
		return s.str, nil
	case c < 0x20:
		return nil, s.errorf("invalid character %q in string", c)
	}
	// A backslash that starts no valid escape.
	if s.pos+1 == len(d) {
		return nil, s.eof()
	}
	if e := d[s.pos+1]; e != 'u' {
		return nil, s.errorf("invalid escape %q in string", e)
	}
	s.pos += 2
	if len(d)-s.pos < 4 {
		return nil, s.eof()
	}
	return nil, s.errorf("invalid \\u escape")
}

// literal reports whether lit starts at i, or errJSONEnd when the input
// ends partway through it.
func (s *jsonScanner) literal(i int, lit string) (bool, error) {
	rest := s.data[i:]
	if len(rest) < len(lit) {
		if string(rest) == lit[:len(rest)] {
			return false, s.eof()
		}
		return false, nil
	}
	return string(rest[:len(lit)]) == lit, nil
}

// skip consumes one value of any kind.
func (s *jsonScanner) skip(depth int) error {
	if depth > maxJSONDepth {
		return s.errorf("nesting deeper than %d", maxJSONDepth)
	}
	switch c := s.peek(); c {
	case '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case '[':
		return s.array(func() error { return s.skip(depth + 1) })
	case '"':
		_, err := s.string()
		return err
	case 't', 'f', 'n':
		lit := "null"
		switch c {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		}
		ok, err := s.literal(s.pos, lit)
		if err != nil {
			return err
		}
		if !ok {
			return s.unexpected("looking for beginning of value")
		}
		s.pos += len(lit)
		return nil
	default:
		_, err := s.numberToken()
		return err
	}
}

// leaves adds every numeric leaf of the object at pos to sk, naming nested
// values by their keys joined with "/" under prefix (trainers already name
// metrics that way, so {"actor": {"lr": 1}} and {"actor/lr": 1} agree).
// Non-numeric leaves are counted as skipped.
func (s *jsonScanner) leaves(sk *sink, prefix []byte, depth int) error {
	if depth > maxJSONDepth {
		return s.errorf("nesting deeper than %d", maxJSONDepth)
	}
	return s.object(func(key []byte) error {
		return s.leaf(sk, prefix, key, depth)
	})
}

// leaf handles the value of one member for leaves.
func (s *jsonScanner) leaf(sk *sink, prefix, key []byte, depth int) error {
	path := append(s.path[:0], prefix...)
	if len(prefix) > 0 {
		path = append(path, '/')
	}
	path = append(path, key...)
	s.path = path
	if s.peek() == '{' {
		// The nested walk reuses s.path, so hand it its own copy.
		return s.leaves(sk, append([]byte(nil), path...), depth+1)
	}
	v, ok, err := s.number()
	switch {
	case err != nil:
		return err
	case ok:
		sk.add(path, v)
	default:
		sk.stats.Skipped++
	}
	return nil
}
