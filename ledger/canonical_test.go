package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf16"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"sorted keys", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested and spaces", `{ "z": [1, {"y":true, "x":null}] }`, `{"z":[1,{"x":null,"y":true}]}`},
		{"integers", `[0, -0, 1, -1, 9007199254740991]`, `[0,0,1,-1,9007199254740991]`},
		{"fractions", `[1.5, 0.1, 1e-7, 1e21, 1e20, 123456789.123, 0.000001]`, `[1.5,0.1,1e-7,1e+21,100000000000000000000,123456789.123,0.000001]`},
		{"float exponent forms", `[1E3, 2.50e-1, 5e-324, 1.7976931348623157e308]`, `[1000,0.25,5e-324,1.7976931348623157e+308]`},
		{"string escapes", `["\u0001\n\"\\/<>&\u2028é"]`, "[\"\\u0001\\n\\\"\\\\/<>&\u2028é\"]"},
		// RFC 8785 §3.2.3: sort by UTF-16 code units, so U+1F600 (D83D DE00) sorts before U+FB33.
		// Decided in FORMAT.md "Canonical JSON" (issue 14): these stay accepted.
		{"underflow to zero", `[1e-400,-1e-400]`, `[0,0]`},
		{"integer literal that is the ES form of its double", `[123456789012345680000,999999999999999900000]`, `[123456789012345680000,999999999999999900000]`},
		{"fraction-form integer a double holds exactly", `[9007199254740994.0,1.8446744073709552e19,1e22,-2e53]`, `[9007199254740994,18446744073709552000,1e+22,-2e+53]`},
		{"shortest digits of a double above 1e21", `[1.2345678901234568e21,1e23]`, `[1.2345678901234568e+21,1e+23]`},
		{"non-integer value rounds", `[9007199254740993.5]`, `[9007199254740994]`},
		{"paired surrogates and U+FFFD", `["\ud83d\ude00\ufffd"]`, "[\"\U0001F600\uFFFD\"]"},
		{"same name in different objects", `[{"a":1},{"a":2}]`, `[{"a":1},{"a":2}]`},
		{"same name in nested objects", `{"a":{"a":1},"b":{"a":{"a":2}}}`, `{"a":{"a":1},"b":{"a":{"a":2}}}`},
		{"values equal to names", `{"a":"a","b":"a","c":["a","a"]}`, `{"a":"a","b":"a","c":["a","a"]}`},
		{"names ending in an escaped backslash", `{"a\\":1,"a":2,"\"":3}`, `{"\"":3,"a":2,"a\\":1}`},
		{"utf16 key order", `{"\ufb33":1,"\ud83d\ude00":2,"a":3}`, "{\"a\":3,\"\U0001F600\":2,\"\uFB33\":1}"},
		{"names reused at one depth", `[{"a":1,"b":{"c":1}},[{"c":1}],{"b":2,"c":{"c":1}}]`, `[{"a":1,"b":{"c":1}},[{"c":1}],{"b":2,"c":{"c":1}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonicalize(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalJSONRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"inexact integer": `{"seed": 18446744073709551615}`,
		"above 2^53":      `[9007199254740993]`,
		"trailing data":   `{} {}`,
		"not json":        `{"a":`,
		// The decisions of FORMAT.md "Canonical JSON" (issue 14).
		"exact 2^60 whose ES form differs":        `[1152921504606846976]`,
		"integer value 2^53+1 with a fraction":    `[9007199254740993.0]`,
		"integer value 2^53+1 with an exponent":   `[9.007199254740993e15]`,
		"negative integer value with an exponent": `[-12345678901234567890e0]`,
		"exact 2^60 with a fraction":              `[1152921504606846976.0]`,
		"integer value above 1e21, extra digits":  `[1.2345678901234567890e21]`,
		"duplicate member name":                   `{"a":1,"a":2}`,
		"duplicate member name after unescaping":  `{"a":1,"\u0061":2}`,
		"duplicate after a nested object":         `{"a":{"b":1},"a":2}`,
		"duplicate name with an escaped quote":    `{"a\"b":1,"a\"b":2}`,
		"nested duplicate member name":            `[{"x":{"k":1,"k":1}}]`,
		"duplicate where an array was before":     `[[1],{"a":1,"a":2}]`,
		"duplicate in a later sibling object":     `[{"a":1},{"b":1,"b":2}]`,
		"lone high surrogate":                     `["\ud800"]`,
		"lone low surrogate":                      `["\udc00"]`,
		"high surrogate then a non-surrogate":     `["\ud800\u0041"]`,
		"lone surrogate in a member name":         `{"\ud83d":1}`,
		"invalid UTF-8 in a string":               "[\"\xff\xfe\"]",
		"UTF-8 encoded surrogate (CESU)":          "[\"\xed\xa0\x80\"]",
		"overflow to infinity":                    `[1e400]`,
	} {
		t.Run(name, func(t *testing.T) {
			if out, err := Canonicalize([]byte(in)); err == nil {
				t.Errorf("Canonicalize(%s) = %s, want an error", in, out)
			}
		})
	}
}

// TestCompareUTF16 checks the key order against a conversion to UTF-16
// code units, the order RFC 8785 defines, on strings built from runes
// around the boundaries where UTF-16 and code point order part (U+FFFF,
// the surrogates' range, U+E000), invalid bytes included.
func TestCompareUTF16(t *testing.T) {
	runes := []string{"", "a", "b", "\x7f", "\u0080", "é", "\ud7ff", "\ue000", "\ufb33", "\uffff", "\U00010000", "\U0001F600", "\U0001F601", "\U0010FFFF", "\xff", "\xed\xa0\x80"}
	rng := rand.New(rand.NewPCG(5, 6))
	word := func() string {
		var b []byte
		for range rng.IntN(4) {
			b = append(b, runes[rng.IntN(len(runes))]...)
		}
		return string(b)
	}
	for range 100000 {
		a, b := word(), word()
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := compareUTF16(a, b); (got > 0) != (want > 0) || (got < 0) != (want < 0) {
			t.Fatalf("compareUTF16(%q, %q) = %d, want the sign of %d", a, b, got, want)
		}
	}
}

// TestFormatES6 checks number rendering against values from the RFC 8785
// appendix B table (IEEE-754 bit patterns and their ECMAScript strings).
func TestFormatES6(t *testing.T) {
	cases := map[uint64]string{
		0x0000000000000000: "0",
		0x8000000000000000: "0",
		0x0000000000000001: "5e-324",
		0x8000000000000001: "-5e-324",
		0x7fefffffffffffff: "1.7976931348623157e+308",
		0x4340000000000000: "9007199254740992",
		0xc340000000000000: "-9007199254740992",
		0x4430000000000000: "295147905179352830000",
		0x44b52d02c7e14af5: "9.999999999999997e+22",
		0x44b52d02c7e14af6: "1e+23",
		0x44b52d02c7e14af7: "1.0000000000000001e+23",
		0x444b1ae4d6e2ef4e: "999999999999999700000",
		0x444b1ae4d6e2ef50: "1e+21",
		0x3eb0c6f7a0b5ed8d: "0.000001",
		0x3eb0c6f7a0b5ed8e: "0.0000010000000000000002",
		0x41b3de4355555553: "333333333.3333332",
		0x41b3de4355555554: "333333333.33333325",
		0x41b3de4355555555: "333333333.3333333",
	}
	for bits, want := range cases {
		if got := formatES6(math.Float64frombits(bits)); got != want {
			t.Errorf("formatES6(%#016x) = %s, want %s", bits, got, want)
		}
	}
}

// FuzzCanonicalJSON checks that canonicalisation is idempotent and that
// equal values give equal bytes whatever their original spelling.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.5,"x",null]}`, `[1e3,1000,1000.0]`, `"\u00e9"`, `{"\ud83d\ude00":{},"z":false}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c1, err := Canonicalize(raw)
		if err != nil {
			return
		}
		c2, err := Canonicalize(c1)
		if err != nil {
			t.Fatalf("canonical output %s does not re-canonicalize: %v", c1, err)
		}
		if !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent:\n%s\n%s", c1, c2)
		}
		// Equal values: decoding and re-encoding with encoding/json (other
		// key order, other number spelling) must land on the same bytes.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("canonicalized input that encoding/json rejects: %v", err)
		}
		c3, err := CanonicalJSON(v)
		if err != nil {
			return // float64 decoding may lose an integer's exactness; that is refused, not silently equal
		}
		if !bytes.Equal(c1, c3) {
			t.Fatalf("equal values, different bytes:\n%s\n%s", c1, c3)
		}
	})
}

// FuzzCanonicalFast checks that whatever canonicalFast takes, the slow
// road through encoding/json takes too, to the same bytes.
func FuzzCanonicalFast(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.5,"x",null]}`, ` [1e3, 1000 ,1000.0,-0, 0.1e-7]`, `"\u00e9\/\b\f\n\r\t\u0000"`,
		`{"\ud83d\ude00":{},"z":false,"\u00e9":true,"e":{"y":1,"x":[{"b":2,"a":1}]}}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`"\ud800"`, `"\udc00\ud800"`, `{"x":"\ud83d\u0041"}`, "\"\xff\"", `[1,]`, `{"a" 1}`, `01`, `1e400`, `9007199254740993`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := canonicalFast(raw)
		if !ok {
			return
		}
		slow, err := canonicalSlow(raw)
		if err != nil {
			t.Fatalf("canonicalFast took %q, which the slow road refuses: %v", raw, err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("%q:\nfast %s\nslow %s", raw, fast, slow)
		}
	})
}

// TestFormatES6FastPath checks that Go's shortest 'f' format, which
// formatES6 uses for 1e-6 <= |f| < 1e21, equals the ECMAScript algorithm.
func TestFormatES6FastPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		f := math.Float64frombits(rng.Uint64())
		if a := math.Abs(f); math.IsNaN(f) || a < 1e-6 || a >= 1e21 {
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(28)-6))
		}
		if a := math.Abs(f); f == 0 || a < 1e-6 || a >= 1e21 {
			continue
		}
		if got, want := formatES6(f), formatES6General(f); got != want {
			t.Fatalf("%v (%#x): fast %s, general %s", f, math.Float64bits(f), got, want)
		}
	}
}
