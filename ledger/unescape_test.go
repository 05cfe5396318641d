package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
)

// unescapeCases are JSON string tokens, valid and not, that AppendUnescaped
// must read as encoding/json does.
var unescapeCases = []string{
	`""`,
	`"plain"`,
	`"tab\tnew\nline\r\b\f\/\\\""`,
	`"\u0041\u00e9\u4e2d"`,
	`"\uD83D\uDE00 pair"`,  // a surrogate pair: one character
	`"\uD83D alone"`,       // a lone high surrogate
	`"\uDE00\uD83D"`,       // low before high
	`"\uD83D\u0041"`,       // a high surrogate, then a plain escape
	`"\uD83D\n"`,           // a high surrogate, then another escape
	`"\uD83D\uD83D\uDE00"`, // high, then a pair
	`"\uD83D\uZZZZ"`,       // a high surrogate, then a bad escape
	`"SELECT\u0020name FROM \"singer\" WHERE"`,    // gold text split by escapes
	`"SELECT na\u006De FROM singer WHERE age>20"`, // an escape inside a word
	`"\u003cthink\u003e \u0026"`,                  // what encoding/json writes for < > &
	"\"raw \xff\xfe invalid\"",                    // invalid UTF-8: U+FFFD per byte
	"\"\xed\xa0\x80 encoded surrogate\"",
	"\"é中😀 valid multi-byte\"",
	"\"\xe4\xb8\"",  // a cut multi-byte character
	"\"\xe4\\n\"",   // a cut multi-byte character before an escape
	`"\u12"`,        // short \u
	`"\u12G4"`,      // bad hex
	`"\x"`,          // unknown escape
	`"\"`,           // escaped closing quote
	`"a"b"`,         // a bare quote inside
	"\"ctl \x01\"",  // a control character
	"\"esc\\\x01\"", // a backslash before a control character
	`"unterminated`,
	`"ends in a backslash\`,
	`x"`,
	`"`,
	``,
}

func TestAppendUnescapedMatchesEncodingJSON(t *testing.T) {
	for _, tok := range unescapeCases {
		checkUnescaped(t, []byte(tok))
	}
}

// TestAppendUnescapedStops: n is the offset of the byte that ends or
// breaks the string, which the metrics scanner reports as the place of a
// syntax error; it reads past nothing.
func TestAppendUnescapedStops(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{`abc`, 3, "abc"},
		{`ab"cd`, 2, "ab"},
		{`a\"b"c`, 4, `a"b`},
		{"a\x1fb", 1, "a"},
		{`a\qb`, 1, "a"},
		{`a\u00e9\u12G4`, 7, "aé"},
		{`a\u12`, 1, "a"},
		{`a\`, 1, "a"},
		{`\uD83D\uZZZZ"`, 6, "\uFFFD"},
		{`\uD83D\uDE00"x`, 12, "😀"},
	} {
		got, n := AppendUnescaped(nil, []byte(tt.s))
		if n != tt.n || string(got) != tt.want {
			t.Errorf("AppendUnescaped(%q) = %q, %d; want %q, %d", tt.s, got, n, tt.want, tt.n)
		}
	}
}

func FuzzAppendUnescaped(f *testing.F) {
	for _, tok := range unescapeCases {
		f.Add([]byte(tok))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkUnescaped(t, b)
		// A string as encoding/json writes it, and that string's bytes
		// quoted as they are, escapes or not.
		enc, err := json.Marshal(string(b))
		if err != nil {
			t.Fatal(err)
		}
		checkUnescaped(t, enc)
		checkUnescaped(t, append(append([]byte{'"'}, b...), '"'))
	})
}

// checkUnescaped compares AppendUnescaped, given tok after its opening
// quote, with json.Unmarshal on tok, less the white space around it that
// encoding/json skips and a token has not. The string is valid exactly
// when AppendUnescaped stops at tok's last byte and that byte is a quote.
func checkUnescaped(t *testing.T, tok []byte) {
	t.Helper()
	tok = bytes.Trim(tok, " \t\r\n")
	var want string
	wantErr := json.Unmarshal(tok, &want)
	if len(tok) == 0 || tok[0] != '"' {
		if wantErr == nil {
			t.Fatalf("encoding/json read %q as a string", tok)
		}
		return
	}
	got, n := AppendUnescaped([]byte("prefix:"), tok[1:])
	ok := n == len(tok)-2 && tok[len(tok)-1] == '"'
	switch {
	case ok != (wantErr == nil):
		t.Fatalf("AppendUnescaped(%q): stopped at %d (valid %v), encoding/json: %v", tok, n, ok, wantErr)
	case ok && string(got) != "prefix:"+want:
		t.Fatalf("AppendUnescaped(%q) = %q, encoding/json %q", tok, got[len("prefix:"):], want)
	}
}
