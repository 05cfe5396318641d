package tasks

import (
	"encoding/json"
	"os"
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
