package spidersql

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: whatever the text, Parse returns a query or an error (a
// ParseError or ErrQuote), never a panic; a parsed query has a hardness.
func FuzzParse(f *testing.F) {
	for _, g := range lines(f, spider+"/dev_gold.sql")[:200] {
		f.Add(g[0])
	}
	for _, s := range []string{"", "(", "select", "select * from", "SELECT T1.* FROM singer AS T1", "select a as singer from singer",
		"select count(*) from singer where age between 1 and", "= = = !", "as", "select * from (select * from singer) union"} {
		f.Add(s)
	}
	schemas, _ := tablesJSON(f, spider+"/tables.json")
	schema := schemas["concert_singer"]
	f.Fuzz(func(t *testing.T, q string) {
		p, err := Parse(schema, q)
		var pe *ParseError
		switch {
		case err != nil && !errors.As(err, &pe) && !errors.Is(err, ErrQuote):
			t.Fatalf("Parse(%q): unexpected error type %T: %v", q, err, err)
		case err == nil:
			Hardness(p)
		}
	})
}

// TestParseDeepNesting: a query nested far deeper than any real one is a
// parse error, not a stack overflow.
func TestParseDeepNesting(t *testing.T) {
	schemas, _ := tablesJSON(t, spider+"/tables.json")
	schema := schemas["concert_singer"]
	q := strings.Repeat("select * from singer where age in (", 1000) + "select age from singer"
	var pe *ParseError
	if _, err := Parse(schema, q); !errors.As(err, &pe) || !strings.Contains(err.Error(), "nested") {
		t.Errorf("Parse of a 1000-deep query: %v; want a ParseError saying it is nested too deep", err)
	}
}
