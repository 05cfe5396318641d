package audit

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rlgate/rlgate/stages/rollout"
)

// The gold audit reads every policy-visible message of every recorded
// request: hundreds of megabytes of JSON strings per gate. encoding/json
// validates and decodes through reflection; the two functions here decode
// the one layout rollout writes by hand and give the same result as
// encoding/json, which FuzzAppendUnquoted and FuzzParseMessages check.

// plainByte marks the bytes a JSON string holds as themselves: not a
// quote, backslash, control character or the start of a multi-byte
// UTF-8 sequence.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendUnquoted appends the value of the JSON string token tok (quotes
// included) to dst as encoding/json decodes it: escapes resolved, a \u
// surrogate pair combined, a lone surrogate and every byte of invalid
// UTF-8 replaced by U+FFFD. ok is false when tok is not a valid JSON
// string.
func appendUnquoted(dst, tok []byte) (_ []byte, ok bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return dst, false
	}
	return appendUnescaped(dst, tok[1:len(tok)-1])
}

// appendUnescaped is appendUnquoted for what lies between the quotes.
func appendUnescaped(dst, s []byte) (_ []byte, ok bool) {
	for len(s) > 0 {
		i := 0
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		dst, s = append(dst, s[:i]...), s[i:]
		if len(s) == 0 {
			break
		}
		switch c := s[0]; {
		case c == '\\':
			if len(s) < 2 {
				return dst, false
			}
			switch e := s[1]; e {
			case '"', '\\', '/':
				dst, s = append(dst, e), s[2:]
			case 'b':
				dst, s = append(dst, '\b'), s[2:]
			case 'f':
				dst, s = append(dst, '\f'), s[2:]
			case 'n':
				dst, s = append(dst, '\n'), s[2:]
			case 'r':
				dst, s = append(dst, '\r'), s[2:]
			case 't':
				dst, s = append(dst, '\t'), s[2:]
			case 'u':
				r, ok := hex4(s[2:])
				if !ok {
					return dst, false
				}
				s = s[6:]
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is
					// one character; anything else is U+FFFD, and what
					// follows is read on its own.
					if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
						if r2, ok := hex4(s[2:]); ok {
							if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
								dst, s = utf8.AppendRune(dst, c), s[6:]
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, false
			}
		case c == '"' || c < 0x20:
			return dst, false
		default:
			r, n := utf8.DecodeRune(s)
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[:n]...)
			}
			s = s[n:]
		}
	}
	return dst, true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// parseMessages decodes a JSON array of chat messages as
// json.Unmarshal into []rollout.Message does. Arrays laid out as
// encoding/json writes []rollout.Message ({"role":…,"content":…} objects,
// no space) are decoded by hand; any other layout by encoding/json.
func parseMessages(b []byte) ([]rollout.Message, error) {
	if msgs, ok := scanMessages(b); ok {
		return msgs, nil
	}
	var msgs []rollout.Message
	if err := json.Unmarshal(b, &msgs); err != nil {
		return nil, err
	}
	return msgs, nil
}

// scanMessages is parseMessages' hand-written path; ok is false when b is
// not laid out as encoding/json writes []rollout.Message.
func scanMessages(b []byte) (msgs []rollout.Message, ok bool) {
	const roleKey, contentKey = `{"role":`, `,"content":`
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	s := b[1 : len(b)-1]
	var buf []byte
	field := func(key string) (string, bool) {
		if len(s) < len(key) || string(s[:len(key)]) != key {
			return "", false
		}
		s = s[len(key):]
		tok, n := jsonStringToken(s)
		if n == 0 {
			return "", false
		}
		s = s[n:]
		var ok bool
		buf, ok = appendUnquoted(buf[:0], tok)
		return string(buf), ok
	}
	msgs = []rollout.Message{}
	for len(s) > 0 {
		if len(msgs) > 0 {
			if s[0] != ',' {
				return nil, false
			}
			s = s[1:]
		}
		role, ok := field(roleKey)
		if !ok {
			return nil, false
		}
		content, ok := field(contentKey)
		if !ok || len(s) == 0 || s[0] != '}' {
			return nil, false
		}
		s = s[1:]
		msgs = append(msgs, rollout.Message{Role: role, Content: content})
	}
	return msgs, true
}
