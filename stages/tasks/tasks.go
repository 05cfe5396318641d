package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/jsonl"
)

// Task is one benchmark question as the policy sees it.
type Task struct {
	ID       string `json:"id"`    // stable across imports: <dataset>-<index>
	Index    int    `json:"index"` // position in the source file, so predictions aligned by position find it
	Dataset  string `json:"dataset"`
	DBID     string `json:"db_id"`
	Question string `json:"question"`
	Evidence string `json:"evidence,omitempty"` // BIRD's external knowledge
	Schema   string `json:"schema"`             // rendered from the database
}

// goldFields are member names that carry answers in the source formats; a
// tasks file holding any of them has leaked gold to the policy side.
var goldFields = []string{"sql", "SQL", "query", "gold", "gold_sql", "ground_truth", "reward_spec", "answer", "difficulty", "query_toks"}

// mayHoldGold reports whether a task line could have a gold field as a
// key. A key spells its letters as themselves or as \u escapes (JSON has
// no other way), so a line holding no \u and no gold field's name in
// quotes has none: the every-line case, which then is not decoded a
// second time (a task's schema makes that decoding most of a read).
func mayHoldGold(raw []byte) bool {
	if bytes.Contains(raw, []byte(`\u`)) {
		return true
	}
	for _, g := range goldFields {
		if bytes.Contains(raw, []byte(`"`+g+`"`)) {
			return true
		}
	}
	return false
}

// ErrGoldField is returned when a tasks file carries a gold field.
var ErrGoldField = errors.New("tasks file carries gold")

// Read reads a tasks.jsonl file, refusing unknown fields, a repeated id
// and, with its own error, any gold field.
func Read(path string) ([]Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tasks %w", err)
	}
	return Parse(path, data)
}

// Parse reads the bytes of a tasks file as Read reads the file; name is
// what its errors call it.
func Parse(name string, data []byte) ([]Task, error) {
	ts, err := jsonl.Parse[Task](name, data, refuseGold)
	if err != nil {
		return nil, fmt.Errorf("read tasks %w", err)
	}
	seen := make(map[string]int, len(ts))
	for i, t := range ts {
		if t.ID == "" || t.DBID == "" {
			return nil, fmt.Errorf("read tasks %s: task %d has no id or db_id", name, i)
		}
		if err := CheckID(t.ID); err != nil {
			return nil, fmt.Errorf("read tasks %s: task %d: %w", name, i, err)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("read tasks %s: task %d has id %s, as task %d does; ids must be unique", name, i, t.ID, j)
		}
		seen[t.ID] = i
	}
	return ts, nil
}

func refuseGold(raw []byte) error {
	if !mayHoldGold(raw) {
		return nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return err
	}
	for _, g := range goldFields {
		if _, ok := members[g]; ok {
			return fmt.Errorf("%w: field %q must never reach the policy side. Try: rlgate data import, which writes gold to its own file", ErrGoldField, g)
		}
	}
	return nil
}

// Write writes tasks as JSON lines.
func Write(w io.Writer, ts []Task) error { return jsonl.Write(w, ts) }

// CheckID refuses a task id holding a newline or NUL: SetDigest ends each
// id with a newline, so such an id would make two different sets hash alike.
func CheckID(id string) error {
	if strings.ContainsAny(id, "\n\x00") {
		return fmt.Errorf("task id %q holds a newline or NUL, which a task set cannot encode", id)
	}
	return nil
}

// SetDigest names a set of task ids: the BLAKE3 of the sorted, distinct
// ids, each followed by a newline (none holds one: CheckID); the empty set
// is the BLAKE3 of no bytes. Runs, gradings and comparisons record
// it, so a reviewer (and the fixed-budget audit) can check that two
// evaluations covered the same tasks whatever their order.
//
// NB: the bytes hashed here are recorded; changing them breaks every
// recorded task set.
func SetDigest(ids []string) ledger.Digest {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var b strings.Builder
	for _, id := range sorted {
		b.WriteString(id)
		b.WriteByte('\n')
	}
	return ledger.Sum([]byte(b.String()))
}
