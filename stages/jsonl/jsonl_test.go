package jsonl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type item struct {
	A int `json:"a"`
}

// TestRead reads files line by line as the house reader must: blank lines
// skipped, CRLF tolerated, and the first bad line named even when later
// batches, decoded at the same time, hold bad lines too.
func TestRead(t *testing.T) {
	var many strings.Builder
	for i := range 1000 {
		switch i + 1 {
		case 700:
			many.WriteString(`{"a": 1} {"a": 2}` + "\n")
		case 900:
			many.WriteString(`{"b": 1}` + "\n")
		default:
			many.WriteString(`{"a": 1}` + "\n")
		}
	}
	for _, c := range []struct {
		name, text string
		want       []item
		err        string
	}{
		{"blank lines and crlf", "{\"a\": 1}\r\n\n  \n{\"a\": 2}", []item{{1}, {2}}, ""},
		{"two values on a line", "{\"a\": 1}\n{\"a\": 2} {\"a\": 3}\n", nil, "line 2: more than one JSON value"},
		{"a value over two lines", "{\"a\":\n1}\n", nil, "line 1: "},
		{"unknown field", "{\"a\": 1}\n{\"b\": 1}\n", nil, "line 2: json: unknown field"},
		{"NUL byte", "{\"a\": 1}\n{\"a\": 1}\x00\n", nil, "line 2 byte 9: NUL byte"},
		{"first bad line of many batches", many.String(), nil, "line 700: more than one JSON value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Read[item](path, nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Read[item](filepath.Join(t.TempDir(), "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
