package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A JSON config that RFC 8785 cannot canonicalize (a member name given
// twice) is refused with an error naming the file, not hashed as some
// reading of it (docs/FORMAT.md "Canonical JSON").
func TestConfigDigestRefusesDuplicateNamesNamingTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.json")
	if err := os.WriteFile(path, []byte(`{"lr": 1e-5, "lr": 2e-5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ConfigDigest(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"lr" occurs twice`) {
		t.Errorf("ConfigDigest = %v, want an error naming %s and the repeated name", err, path)
	}
}
