package tasks

import (
	"encoding/json"
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
