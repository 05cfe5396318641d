package ledger

import (
	"unicode/utf16"
	"unicode/utf8"
)

// plainByte marks the bytes a JSON string holds as themselves: not a
// quote, backslash, control character or the start of a multi-byte
// UTF-8 sequence.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendUnescaped appends to dst what the content of a JSON string stands
// for, as encoding/json decodes it: escapes resolved, a \u surrogate pair
// combined, a lone surrogate and every byte of invalid UTF-8 replaced by
// U+FFFD. s starts after the opening quote. It reads up to the first byte
// that ends or breaks the string (an unescaped quote, a control
// character, or a backslash that starts no valid escape, a \u escape cut
// short included) and returns that byte's offset in s as n, or len(s)
// when s holds none: so s is a valid string's whole content exactly when
// n == len(s), and the string closes at s[n] when s[n] is a quote.
//
// The readers too hot for encoding/json's reflection decode strings here:
// the gold audit (hundreds of megabytes of recorded messages per gate),
// the trainer-metrics scanner and canonicalFast, which writes every
// ledger body.
func AppendUnescaped(dst, s []byte) (_ []byte, n int) {
	i := 0
	for i < len(s) {
		j := i
		for j < len(s) && plainByte[s[j]] {
			j++
		}
		dst, i = append(dst, s[i:j]...), j
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) {
				return dst, i
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok {
					return dst, i
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is
					// one character; anything else is U+FFFD, and what
					// follows is read on its own.
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if r2, ok := hex4(s[i+2:]); ok {
							if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
								dst, i = utf8.AppendRune(dst, c), i+6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, i
			}
			i += 2
		case c == '"' || c < 0x20:
			return dst, i
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return dst, i
}

// SkipSpace returns the index of the first byte of b at or after i that
// is not JSON white space (space, tab, newline, carriage return).
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
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
