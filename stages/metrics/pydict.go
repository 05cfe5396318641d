package metrics

import (
	"bytes"
	"strconv"

	"github.com/rlgate/rlgate/ledger"
)

// pyDict reads the dict literal that Python's repr or pprint.pformat wrote
// for a step's metrics (SkyRL's and OpenRLHF's console loggers), adding its
// numeric leaves to the record begun in sk. Nested dicts are flattened with
// "/" as for JSON. A value is a number when it is a numeric literal, a
// NumPy or PyTorch repr around one (np.int64(5), tensor(0.5, ...)), or a
// string holding one: SkyRL's console logger writes every float as the
// string '0.1234'. Other values (None, bools, lists, other strings) are
// skipped and counted. An item counts only once the comma or brace after
// it is there, so a dict cut short yields its complete items alone.
type pyDict struct {
	data []byte
	pos  int
	path []byte // scratch for nested keys joined with "/"
	str  []byte // scratch for a decoded string
}

// maxPyDepth bounds nesting so hostile input cannot exhaust the stack.
const maxPyDepth = 64

// read parses the dict at pos (which must be '{') and reports whether it
// closed.
func (p *pyDict) read(sk *sink, data []byte) bool {
	p.data, p.pos, p.path = data, 0, p.path[:0]
	p.space()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return false
	}
	p.pos++
	return p.items(sk, 0)
}

func (p *pyDict) space() { p.pos = ledger.SkipSpace(p.data, p.pos) }

// items reads "key: value" items up to the closing brace.
func (p *pyDict) items(sk *sink, depth int) bool {
	base := len(p.path)
	for {
		p.space()
		if p.pos >= len(p.data) {
			return false
		}
		if p.data[p.pos] == '}' {
			p.pos++
			return true
		}
		key, ok := p.key()
		if !ok {
			return false
		}
		p.path = append(p.path[:base], key...)
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return false
		}
		p.pos++
		p.space()
		if p.pos >= len(p.data) {
			return false
		}
		if p.data[p.pos] == '{' && depth < maxPyDepth {
			p.pos++
			p.path = append(p.path, '/')
			if !p.items(sk, depth+1) {
				return false
			}
			p.path = p.path[:base]
			if !p.next() {
				return false
			}
			continue
		}
		v, isNum, ok := p.value()
		if !ok || !p.next() {
			return false
		}
		if isNum {
			sk.add(p.path, v)
		} else {
			sk.stats.Skipped++
		}
		p.path = p.path[:base]
	}
}

// next consumes the comma after an item, or sees the closing brace (left
// for the caller); it fails at the end of input or on anything else.
func (p *pyDict) next() bool {
	p.space()
	if p.pos >= len(p.data) {
		return false
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return true
	case '}':
		return true
	}
	return false
}

// key reads a dict key: a string literal, or a bare token (an int key).
func (p *pyDict) key() ([]byte, bool) {
	if c := p.data[p.pos]; c == '\'' || c == '"' {
		return p.strings()
	}
	start := p.pos
	if !p.token() {
		return nil, false
	}
	return bytes.TrimSpace(p.data[start:p.pos]), true
}

// value reads a value: strings (adjacent literals concatenate, as pprint
// writes a long string, possibly in parentheses), or a bare token up to
// the next comma or brace outside brackets and quotes.
func (p *pyDict) value() (float64, bool, bool) {
	c := p.data[p.pos]
	if c == '\'' || c == '"' || c == '(' && p.pos+1 < len(p.data) && (p.data[p.pos+1] == '\'' || p.data[p.pos+1] == '"') {
		paren := c == '('
		if paren {
			p.pos++
		}
		s, ok := p.strings()
		if !ok {
			return 0, false, false
		}
		if paren {
			p.space()
			if p.pos >= len(p.data) || p.data[p.pos] != ')' {
				return 0, false, false
			}
			p.pos++
		}
		v, err := strconv.ParseFloat(string(s), 64)
		return v, err == nil, true
	}
	start := p.pos
	if !p.token() {
		return 0, false, false
	}
	v, isNum := consoleValue(bytes.TrimSpace(p.data[start:p.pos]))
	return v, isNum, true
}

// strings reads one or more adjacent string literals into p.str.
func (p *pyDict) strings() ([]byte, bool) {
	p.str = p.str[:0]
	for p.pos < len(p.data) && (p.data[p.pos] == '\'' || p.data[p.pos] == '"') {
		q := p.data[p.pos]
		p.pos++
		for {
			if p.pos >= len(p.data) || p.data[p.pos] == '\n' {
				return nil, false
			}
			c := p.data[p.pos]
			p.pos++
			if c == q {
				break
			}
			if c == '\\' && p.pos < len(p.data) {
				// Quotes and backslashes are all a key or a number can
				// hold escaped; other escapes are kept as written.
				if e := p.data[p.pos]; e == '\'' || e == '"' || e == '\\' {
					c = e
					p.pos++
				}
			}
			p.str = append(p.str, c)
		}
		p.space()
	}
	return p.str, true
}

// token moves past a bare value such as 0.5, None, np.int64(5) or
// tensor(0.5, device='cuda:0'), stopping before a comma, colon or closing
// brace outside brackets and quotes; it fails at the end of input.
func (p *pyDict) token() bool {
	depth := 0
	var quote byte
	for ; p.pos < len(p.data); p.pos++ {
		c := p.data[p.pos]
		switch {
		case quote != 0:
			if c == '\\' {
				p.pos++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']':
			depth--
		case depth == 0 && (c == ',' || c == '}' || c == ':'):
			return true
		case c == '}':
			depth--
		}
	}
	return false
}
