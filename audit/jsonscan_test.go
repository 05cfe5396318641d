package audit

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/rollout"
)

// jsonscanCases are JSON string tokens, valid and not, that the
// hand-written decoder must read as encoding/json does.
var jsonscanCases = []string{
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
	`"SELECT\u0020name FROM \"singer\" WHERE"`,    // gold text split by escapes
	`"SELECT na\u006De FROM singer WHERE age>20"`, // an escape inside a word
	`"\u003cthink\u003e \u0026"`,                  // what encoding/json writes for < > &
	"\"raw \xff\xfe invalid\"",                    // invalid UTF-8: U+FFFD per byte
	"\"\xed\xa0\x80 encoded surrogate\"",
	"\"é中😀 valid multi-byte\"",
	"\"\xe4\xb8\"", // a cut multi-byte character
	`"\u12"`,       // short \u
	`"\u12G4"`,     // bad hex
	`"\x"`,         // unknown escape
	`"\"`,          // escaped closing quote
	`"a"b"`,        // a bare quote inside
	"\"ctl \x01\"", // a control character
	`"unterminated`,
	`x"`,
	`"`,
	``,
}

func TestAppendUnquotedMatchesEncodingJSON(t *testing.T) {
	for _, tok := range jsonscanCases {
		checkUnquoted(t, []byte(tok))
	}
}

func FuzzAppendUnquoted(f *testing.F) {
	for _, tok := range jsonscanCases {
		f.Add([]byte(tok))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkUnquoted(t, b)
		// A string as encoding/json writes it, and that string's bytes
		// quoted as they are, escapes or not.
		enc, err := json.Marshal(string(b))
		if err != nil {
			t.Fatal(err)
		}
		checkUnquoted(t, enc)
		checkUnquoted(t, append(append([]byte{'"'}, b...), '"'))
	})
}

// checkUnquoted compares appendUnquoted with json.Unmarshal on tok, less
// the white space around it that encoding/json skips and a token has not.
func checkUnquoted(t *testing.T, tok []byte) {
	t.Helper()
	tok = bytes.Trim(tok, " \t\r\n")
	var want string
	wantErr := json.Unmarshal(tok, &want)
	got, ok := appendUnquoted([]byte("prefix:"), tok)
	switch {
	case ok != (wantErr == nil):
		t.Fatalf("appendUnquoted(%q): ok %v, encoding/json: %v", tok, ok, wantErr)
	case ok && string(got) != "prefix:"+want:
		t.Fatalf("appendUnquoted(%q) = %q, encoding/json %q", tok, got[len("prefix:"):], want)
	}
}

func TestParseMessagesMatchesEncodingJSON(t *testing.T) {
	fast := func(msgs []rollout.Message) []byte {
		b, err := json.Marshal(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := scanMessages(b); !ok {
			t.Fatalf("scanMessages did not take %s", b)
		}
		return b
	}
	for _, b := range [][]byte{
		fast([]rollout.Message{}),
		fast([]rollout.Message{{Role: "system", Content: "You are <careful> & \"exact\".\n\tSELECT name FROM singer"}}),
		fast([]rollout.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b😀\u2028"}, {Role: "user", Content: ""}}),
		[]byte(`[{"role":"user","content":"\uD83D\uDE00 \u0041"}]`),
		[]byte(`[{"content":"c","role":"user"}]`),            // another order: encoding/json decides
		[]byte(`[{"role":"user","content":"c","name":"x"}]`), // an extra field
		[]byte(`[ {"role":"user","content":"c"} ]`),          // spaces
		[]byte(`[{"Role":"user","content":"c"}]`),            // another case
		[]byte(`[{"role":"user","content":"c"},]`),
		[]byte(`[{"role":"user","content":"c"}{"role":"user","content":"d"}]`),
		[]byte(`[{"role":"user","content":"c\x"}]`),
		[]byte(`[{"role":1,"content":"c"}]`),
		[]byte(`null`),
		[]byte(`[`),
	} {
		checkMessages(t, b)
	}
}

func FuzzParseMessages(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"\uD83D\uDE00 \u0041"}]`), "system", "SELECT \"a\" FROM t\n")
	f.Add([]byte(`[{"role":"user","content":"c"},{"role":"assistant","content":"d"}]`), "user", "\xff\\u0041")
	f.Fuzz(func(t *testing.T, b []byte, role, content string) {
		checkMessages(t, b)
		enc, err := json.Marshal([]rollout.Message{{Role: role, Content: content}, {Role: content, Content: role}})
		if err != nil {
			t.Fatal(err)
		}
		checkMessages(t, enc)
	})
}

// checkMessages compares parseMessages with json.Unmarshal on b.
func checkMessages(t *testing.T, b []byte) {
	t.Helper()
	var want []rollout.Message
	wantErr := json.Unmarshal(b, &want)
	got, err := parseMessages(b)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("parseMessages(%q): error %v, encoding/json: %v", b, err, wantErr)
	}
	if diff := cmp.Diff(want, got); err == nil && diff != "" {
		t.Fatalf("parseMessages(%q) (-encoding/json +got):\n%s", b, diff)
	}
}
