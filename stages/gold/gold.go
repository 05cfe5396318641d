// Package gold holds the answers of a benchmark, apart from its public
// tasks. Only grading reads it, after the trajectories it grades are
// frozen; the policy side never imports it.
package gold

import (
	"fmt"
	"io"

	"github.com/rlgate/rlgate/stages/jsonl"
)

// Gold is the answer to one task, joined to it by ID.
type Gold struct {
	ID         string `json:"id"`
	Index      int    `json:"index"` // position in the source file, which predictions files align with
	DBID       string `json:"db_id"` // the database the gold runs on, which grading uses
	SQL        string `json:"sql"`
	Difficulty string `json:"difficulty,omitempty"` // BIRD: simple, moderate, challenging
}

// Read reads a gold.jsonl file, refusing unknown fields.
func Read(path string) ([]Gold, error) {
	gs, err := jsonl.Read[Gold](path, nil)
	if err != nil {
		return nil, fmt.Errorf("read gold %w", err)
	}
	for i, g := range gs {
		if g.ID == "" || g.DBID == "" {
			return nil, fmt.Errorf("read gold %s: entry %d has no id or db_id", path, i)
		}
	}
	return gs, nil
}

// Write writes gold entries as JSON lines.
func Write(w io.Writer, gs []Gold) error { return jsonl.Write(w, gs) }
