package gold

import (
	"fmt"
	"io"
	"os"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/jsonl"
)

// Gold is the answer to one task, joined to it by ID.
type Gold struct {
	ID         string `json:"id"`
	Index      int    `json:"index"` // position in the source file, which predictions files align with
	DBID       string `json:"db_id"` // the database the gold runs on, which grading uses
	SQL        string `json:"sql"`
	Difficulty string `json:"difficulty,omitempty"` // BIRD: simple, moderate, challenging; Spider: easy, medium, hard, extra
}

// Read reads a gold.jsonl file, refusing unknown fields and a repeated id.
func Read(path string) ([]Gold, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gold %w", err)
	}
	return Parse(path, data)
}

// Parse reads the bytes of a gold file as Read reads the file; name is
// what its errors call it.
func Parse(name string, data []byte) ([]Gold, error) {
	gs, err := jsonl.ParseFast(name, data, nil, readLine)
	if err != nil {
		return nil, fmt.Errorf("read gold %w", err)
	}
	seen := make(map[string]int, len(gs))
	for i, g := range gs {
		if g.ID == "" || g.DBID == "" {
			return nil, fmt.Errorf("read gold %s: entry %d has no id or db_id", name, i)
		}
		if j, dup := seen[g.ID]; dup {
			return nil, fmt.Errorf("read gold %s: entry %d has id %s, as entry %d does; ids must be unique", name, i, g.ID, j)
		}
		seen[g.ID] = i
	}
	return gs, nil
}

// readLine reads a line in the layout Write gives it (the fields in
// order, no spaces, an empty difficulty left out), for jsonl.ParseFast;
// anything else is left to encoding/json.
func readLine(b []byte, g *Gold) bool {
	s := ledger.CanonicalScanner{B: b}
	ok := true
	field := func(name string) string {
		if !ok || !s.Lit(name) {
			ok = false
			return ""
		}
		v, read := s.Str()
		ok = read
		return string(v)
	}
	var v Gold
	v.ID = field(`{"id":`)
	if !ok || !s.Lit(`,"index":`) {
		return false
	}
	n, read := s.Int()
	if v.Index = int(n); !read || int64(v.Index) != n {
		return false
	}
	v.DBID = field(`,"db_id":`)
	v.SQL = field(`,"sql":`)
	if ok && s.Lit(`,"difficulty"`) {
		v.Difficulty = field(`:`)
	}
	if !ok || !s.Lit("}") || !s.Done() {
		return false
	}
	*g = v
	return true
}

// Write writes gold entries as JSON lines.
func Write(w io.Writer, gs []Gold) error { return jsonl.Write(w, gs) }
