package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// CanonicalJSON encodes v as RFC 8785 (JCS) canonical JSON: object keys
// sorted by UTF-16 code units, no insignificant whitespace, numbers in the
// ECMAScript shortest round-trip form, strings escaped minimally.
//
// NB: the bytes written here are hashed; changing them breaks every ledger.
//
// v is first encoded with encoding/json, so struct tags and MarshalJSON
// methods apply; encoding/json writes invalid UTF-8 in a Go string as
// U+FFFD, so Go strings never trip Canonicalize's UTF-8 check. An integer
// that a float64 cannot hold exactly is refused rather than silently
// rounded, since a rounded seed or byte count in a ledger would be a quiet
// falsehood: store such values as strings.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return Canonicalize(raw)
}

// Canonicalize rewrites JSON text into its RFC 8785 canonical form. The
// input must be I-JSON (RFC 7493), as RFC 8785 requires: it refuses text
// that is not UTF-8, an escaped lone surrogate, a member name used twice in
// one object, and the numbers docs/FORMAT.md "Canonical JSON" refuses;
// none of these is ever changed into something else before hashing.
func Canonicalize(raw []byte) ([]byte, error) {
	if out, ok := canonicalFast(raw); ok {
		return out, nil
	}
	return canonicalSlow(raw)
}

// canonicalSlow is Canonicalize through encoding/json: the text decoded
// into Go values, which are written out in canonical form. It says why it
// refuses what canonicalFast does not take on.
func canonicalSlow(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if rest := bytes.Trim(raw[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("canonical json: trailing data after the value")
	}
	if err := checkIJSON(raw); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return buf.Bytes(), nil
}

// checkIJSON refuses what encoding/json resolves silently in syntactically
// valid JSON text raw: bytes that are not UTF-8 and escaped lone surrogates
// (both read as U+FFFD, which a decoded string cannot tell from a real
// one), and a member name used twice in one object (the last is kept).
// Names are compared after unescaping, so "a" and "\u0061" are the same.
// It is one pass over raw, which encoding/json has already checked, so
// every '"' outside a string opens one and every escape is complete.
// Unescaped names are read in place, and the name sets are reused from one
// object to the next at the same depth: the bodies it checks hold
// thousands of small objects (an outcomes batch).
func checkIJSON(raw []byte) error {
	if !utf8.Valid(raw) {
		return fmt.Errorf("text is not valid UTF-8 (I-JSON)")
	}
	// raw is not written while this runs, and no name outlives it but in
	// the error, which copies it.
	text := unsafe.String(unsafe.SliceData(raw), len(raw))
	type level struct{ object, expectName bool }
	var stack []level
	var names []map[string]bool // by depth: the names of the open object there
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '{':
			stack = append(stack, level{object: true, expectName: true})
			switch d := len(stack) - 1; {
			case d == len(names):
				names = append(names, map[string]bool{})
			case names[d] == nil: // an array's depth until now
				names[d] = map[string]bool{}
			default:
				clear(names[d])
			}
		case '[':
			stack = append(stack, level{})
			if len(stack) > len(names) {
				names = append(names, nil)
			}
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if o := &stack[len(stack)-1]; o.object {
				o.expectName = true
			}
		case '"':
			start := i
			escaped := false
			for i++; text[i] != '"'; i++ {
				if text[i] != '\\' {
					continue
				}
				escaped = true
				i++
				if text[i] == 'u' {
					n, err := checkSurrogate(raw[i-1:])
					if err != nil {
						return err
					}
					i += n
				}
			}
			if len(stack) == 0 {
				continue
			}
			o := &stack[len(stack)-1]
			if !o.object || !o.expectName {
				continue
			}
			o.expectName = false
			name := text[start+1 : i]
			if escaped {
				json.Unmarshal(raw[start:i+1], &name) // valid: encoding/json read it
			}
			seen := names[len(stack)-1]
			if seen[name] {
				return fmt.Errorf("member name %q occurs twice in one object (RFC 8785 needs I-JSON, which forbids it)", name)
			}
			seen[name] = true
		}
	}
	return nil
}

// checkSurrogate reads the \uXXXX escape at the start of esc and, when it
// is a high surrogate, the escaped low one that must follow it. It returns
// how many bytes after the 'u' it read, and refuses a surrogate that is
// not one half of such a pair.
func checkSurrogate(esc []byte) (int, error) {
	r, _ := hex4(esc[2:])
	if !utf16.IsSurrogate(r) {
		return 4, nil
	}
	if r < 0xdc00 && len(esc) >= 12 && esc[6] == '\\' && esc[7] == 'u' {
		if lo, _ := hex4(esc[8:]); lo >= 0xdc00 && lo <= 0xdfff {
			return 10, nil
		}
	}
	return 0, fmt.Errorf("string holds the lone surrogate \\u%04x (I-JSON forbids it)", r)
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		s, err := canonicalNumber(string(x))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case string:
		writeCanonicalString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonicalString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unexpected decoded type %T", v)
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// requires; this differs from byte order for characters above U+FFFF. It
// compares rune by rune without converting (every object's keys are
// sorted with it, so a conversion per comparison was most of the
// allocations of encoding an outcomes batch): the first differing runes
// decide, by their first code units, which differ unless both runes lie
// above U+FFFF, where code point order is code unit order. Bytes that are
// not UTF-8 read as U+FFFD, as a conversion to UTF-16 reads them.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if ra > 0xffff && rb > 0xffff {
				return int(ra) - int(rb)
			}
			return int(firstUnit(ra)) - int(firstUnit(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit is the first UTF-16 code unit of r: r itself, or the high
// surrogate of a rune above U+FFFF.
func firstUnit(r rune) rune {
	if r > 0xffff {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

func writeCanonicalString(buf *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	if plainString(s) {
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[r>>4])
			buf.WriteByte(hexDigits[r&0xf])
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}

// plainString reports whether s is valid UTF-8 needing no escapes, the
// common case, which is then written as is.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.ValidString(s)
}

// canonicalNumber renders a JSON number literal the way ECMAScript's
// Number.prototype.toString renders the float64 it denotes.
func canonicalNumber(lit string) (string, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("number %s is not a finite float64", lit)
	}
	out := formatES6(f)
	// An integer literal must come out as written: otherwise it held more
	// digits than a float64 keeps (a uint64 seed, say) and would be
	// silently rounded. Floats that encoding/json spells without a point
	// (1e17 as 100000000000000000) come out as written and pass. This rule
	// is idempotent: the output is always the ES form of its own double.
	if isIntegerLiteral(lit) {
		if out != lit && !(lit == "-0" && out == "0") {
			return "", fmt.Errorf("integer %s is not exactly representable as a float64 (RFC 8785); store it as a string", lit)
		}
		return out, nil
	}
	// The same seed written 9007199254740993.0 or 9.007199254740993e15 must
	// not round either: a number whose value is an integer must denote what
	// its output denotes. Below 2^53 every integer is a double, so only
	// larger ones need the exact comparison. The output passes this check
	// again, and so does any writer's shortest round-trip spelling of a
	// double (Python's 1.8446744073709552e+19).
	if math.Abs(f) >= 1<<53 {
		v, _ := new(big.Rat).SetString(lit)
		if o, _ := new(big.Rat).SetString(out); v != nil && o != nil && v.IsInt() && v.Cmp(o) != 0 {
			return "", fmt.Errorf("number %s is an integer that a float64 cannot hold exactly (it would become %s); store it as a string", lit, out)
		}
	}
	return out, nil
}

func isIntegerLiteral(lit string) bool {
	return !strings.ContainsAny(lit, ".eE")
}

// formatES6 implements ECMAScript Number::toString for finite f.
func formatES6(f float64) string {
	return string(appendES6(nil, f))
}

// appendES6 appends formatES6(f) to dst without allocating in the common
// case: metric batches format millions of values.
func appendES6(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // also for -0
	}
	// Where ECMAScript prints plain decimals (1e-6 <= |f| < 1e21), Go's
	// shortest 'f' format gives the same digits in the same form; a test
	// checks this against formatES6General.
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	return append(dst, formatES6General(f)...)
}

// formatES6General follows the ECMAScript algorithm step by step, for
// every finite non-zero f.
func formatES6General(f float64) string {
	neg := f < 0
	if neg {
		f = -f
	}
	// Shortest round-trip digits and decimal exponent: f = 0.d1d2...dk × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±xx
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k := len(digits)
	n := exp + 1
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		s += "e" + sign + strconv.Itoa(abs(n-1))
	}
	if neg {
		s = "-" + s
	}
	return s
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
