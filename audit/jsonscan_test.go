package audit

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/stages/rollout"
)

func TestParseMessagesMatchesEncodingJSON(t *testing.T) {
	fast := func(msgs []rollout.Message) []byte {
		b, err := json.Marshal(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := scanMessages(b, nil, nil); !ok {
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
	content, raw, err := parseMessages(b, nil, nil)
	var got []rollout.Message
	for _, m := range raw {
		got = append(got, rollout.Message{Role: m.role, Content: string(content[m.start:m.end])})
	}
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("parseMessages(%q): error %v, encoding/json: %v", b, err, wantErr)
	}
	// A null array and an empty one both hold no message.
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); err == nil && diff != "" {
		t.Fatalf("parseMessages(%q) (-encoding/json +got):\n%s", b, diff)
	}
}
