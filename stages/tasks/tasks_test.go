package tasks

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetDigestMatchesIndependentImplementation checks SetDigest against
// digests computed by an independent implementation of docs/FORMAT.md
// ("Identifiers: Task set"), including the 140 BIRD ids of a real
// comparison entry.
func TestSetDigestMatchesIndependentImplementation(t *testing.T) {
	b, err := os.ReadFile("testdata/task-set-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name   string   `json:"name"`
			IDs    []string `json:"ids"`
			Digest string   `json:"digest"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 6 {
		t.Fatalf("read %d cases, want 6", len(file.Cases))
	}
	for _, c := range file.Cases {
		if got := SetDigest(c.IDs).Hex(); got != c.Digest {
			t.Errorf("%s: %s, want %s", c.Name, got, c.Digest)
		}
	}
}

// A task id holding a newline or NUL would make the task-set encoding
// ambiguous ({"a\nb"} and {"a", "b"} would hash alike): Read refuses it,
// naming the file and the task.
func TestReadRefusesIDWithNewlineOrNUL(t *testing.T) {
	for _, id := range []string{`a\nb`, `a\u0000b`} {
		path := filepath.Join(t.TempDir(), "tasks.jsonl")
		line := `{"id":"` + id + `","index":0,"dataset":"d","db_id":"db","question":"q","schema":"s"}` + "\n"
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "task 0") || !strings.Contains(err.Error(), "newline or NUL") {
			t.Errorf("Read with id %s: %v, want an error naming %s, task 0 and the newline or NUL", id, err, path)
		}
	}
}

// TestParseRefusesGoldFields: a gold field is refused as a key however it
// is spelt (escapes included), and a task that only mentions one in its
// text is read.
func TestParseRefusesGoldFields(t *testing.T) {
	line := func(extra string) []byte {
		return []byte(`{"id":"t1","index":0,"dataset":"spider","db_id":"db","question":"How many?","schema":"CREATE TABLE t (a int)"` + extra + "}\n")
	}
	for _, extra := range []string{`,"sql":"SELECT 1"`, `,"\u0073ql":"SELECT 1"`, `,"gold_\u0073ql":"x"`, `,"ground_truth":1`, `,"difficulty":"hard"`} {
		if _, err := Parse("tasks.jsonl", line(extra)); !errors.Is(err, ErrGoldField) {
			t.Errorf("a task with %s: %v, want ErrGoldField", extra, err)
		}
	}
	for _, q := range []string{`,"evidence":"the \"sql\" column"`, `,"evidence":"query, gold, answer"`, `,"evidence":"\u003e 3"`} {
		ts, err := Parse("tasks.jsonl", line(q))
		if err != nil || len(ts) != 1 {
			t.Errorf("a task whose text names a gold field (%s): %v", q, err)
		}
	}
}
