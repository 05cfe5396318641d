package ledger

import (
	"bytes"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// fastMaxDepth is the deepest nesting canonicalFast takes on; deeper text
// goes the slow road (encoding/json's own limit is 10,000).
const fastMaxDepth = 1000

// canonicalFast writes the canonical form of the JSON text raw in one
// pass, without decoding it into Go values: decoding an outcomes batch of
// a thousand items into maps and back cost ten times the rest of its
// canonicalization. It reports false for anything it does not take on:
// text that is not JSON, bytes that are not UTF-8, an escaped surrogate
// that is not half of a pair, a member name used twice in one object, a
// number canonicalNumber refuses, nesting deeper than fastMaxDepth.
// Canonicalize then takes the slow road, which refuses each of these with
// its reason; FuzzCanonicalFast checks that the two give the same bytes
// whenever this one succeeds.
func canonicalFast(raw []byte) ([]byte, bool) {
	if !utf8.Valid(raw) {
		return nil, false
	}
	p := canonPass{in: raw}
	p.out.Grow(len(raw))
	if !p.value(0) {
		return nil, false
	}
	p.space()
	if p.i != len(p.in) {
		return nil, false
	}
	return p.out.Bytes(), true
}

// canonPass is one canonicalFast: the text read, where, and what is
// written so far.
type canonPass struct {
	in  []byte
	i   int
	out bytes.Buffer
	// members are the members of the objects open, innermost last;
	// sorted is scratch for putting one object's members in order.
	members []member
	sorted  []byte
}

// member is one object member written to out: its name and the bytes
// out[start:end] of `"name":value`.
type member struct {
	name       string
	start, end int
}

func (p *canonPass) space() { p.i = SkipSpace(p.in, p.i) }

// next skips white space and consumes c when it comes next.
func (p *canonPass) next(c byte) bool {
	p.space()
	if p.i < len(p.in) && p.in[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *canonPass) value(depth int) bool {
	p.space()
	if p.i >= len(p.in) {
		return false
	}
	switch p.in[p.i] {
	case '{':
		return depth < fastMaxDepth && p.object(depth+1)
	case '[':
		return depth < fastMaxDepth && p.array(depth+1)
	case '"':
		s, ok := p.str()
		if ok {
			writeCanonicalString(&p.out, s)
		}
		return ok
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	}
	return p.number()
}

func (p *canonPass) literal(lit string) bool {
	if !bytes.HasPrefix(p.in[p.i:], []byte(lit)) {
		return false
	}
	p.i += len(lit)
	p.out.WriteString(lit)
	return true
}

func (p *canonPass) number() bool {
	start := p.i
	for p.i < len(p.in) && numberBytes[p.in[p.i]] {
		p.i++
	}
	lit := p.in[start:p.i]
	if !jsonNumber(lit) {
		return false
	}
	if smallInteger(lit) {
		p.out.Write(lit) // its own canonical form, as canonicalNumber would find
		return true
	}
	s, err := canonicalNumber(string(lit))
	p.out.WriteString(s)
	return err == nil
}

// smallInteger reports whether the JSON number lit is an integer of at
// most 15 digits other than -0: a float64 holds it exactly, and ECMAScript
// writes it as it is written (JSON has no leading zeros).
func smallInteger(lit []byte) bool {
	digits := lit
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (len(lit) == 2 && lit[1] == '0') {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (p *canonPass) array(depth int) bool {
	p.i++
	p.out.WriteByte('[')
	if p.next(']') {
		p.out.WriteByte(']')
		return true
	}
	for {
		if !p.value(depth) {
			return false
		}
		if p.next(']') {
			p.out.WriteByte(']')
			return true
		}
		if !p.next(',') {
			return false
		}
		p.out.WriteByte(',')
	}
}

// object writes an object's members as they come, then puts them in
// UTF-16 order of their names where they are not.
func (p *canonPass) object(depth int) bool {
	p.i++
	open := p.out.Len()
	p.out.WriteByte('{')
	if p.next('}') {
		p.out.WriteByte('}')
		return true
	}
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	for {
		if !p.next('"') {
			return false
		}
		p.i--
		name, ok := p.str()
		if !ok || !p.next(':') {
			return false
		}
		if len(p.members) > base {
			p.out.WriteByte(',')
		}
		start := p.out.Len()
		writeCanonicalString(&p.out, name)
		p.out.WriteByte(':')
		if !p.value(depth) {
			return false
		}
		p.members = append(p.members, member{name, start, p.out.Len()})
		if p.next('}') {
			break
		}
		if !p.next(',') {
			return false
		}
	}
	ms := p.members[base:]
	inOrder := true
	for k := 1; k < len(ms) && inOrder; k++ {
		inOrder = compareUTF16(ms[k-1].name, ms[k].name) < 0
	}
	if !inOrder {
		slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.name, b.name) })
		for k := 1; k < len(ms); k++ {
			if ms[k-1].name == ms[k].name {
				return false // a name used twice: the slow road says so
			}
		}
		written := p.out.Bytes()
		p.sorted = p.sorted[:0]
		for k, m := range ms {
			if k > 0 {
				p.sorted = append(p.sorted, ',')
			}
			p.sorted = append(p.sorted, written[m.start:m.end]...)
		}
		copy(written[open+1:], p.sorted)
	}
	p.out.WriteByte('}')
	return true
}

// str reads the string at p.i: a string without escapes is returned as
// the text's own bytes (never written while the pass runs), one with
// escapes unescaped into new bytes. A \u escape of a surrogate, half of
// a pair or not, is left to the slow road, which refuses a lone one (the
// text is known to be UTF-8: canonicalFast checked it whole).
func (p *canonPass) str() (string, bool) {
	p.i++
	rest := p.in[p.i:]
	n := 0
	for n < len(rest) && rest[n] != '"' && rest[n] != '\\' && rest[n] >= 0x20 {
		n++
	}
	if n < len(rest) && rest[n] == '"' {
		p.i += n + 1
		return unsafe.String(unsafe.SliceData(rest), n), true
	}
	b, n := AppendUnescaped(nil, rest)
	if n == len(rest) || rest[n] != '"' || surrogateEscape(rest[:n]) {
		return "", false
	}
	p.i += n + 1
	return string(b), true
}

// surrogateEscape reports whether s may hold a \u escape of a surrogate
// (it may also be an escaped backslash before "ud8", which costs only the
// slow road).
func surrogateEscape(s []byte) bool {
	for {
		i := bytes.Index(s, []byte(`\u`))
		if i < 0 || i+4 > len(s) {
			return false
		}
		if c := s[i+3]; (s[i+2] == 'd' || s[i+2] == 'D') && (c >= '8' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return true
		}
		s = s[i+2:]
	}
}
