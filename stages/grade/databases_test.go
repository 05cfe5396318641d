package grade

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// TestCheckDatabasesMissing: a database root without the imported
// databases is refused with the one sentinel for a missing database
// (sqlenv.ErrNoDatabase), the first missing database named by its path.
func TestCheckDatabasesMissing(t *testing.T) {
	man, err := dataset.ReadManifest(importSpider(t))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	_, err = CheckDatabases(context.Background(), man, root, false, nil)
	if !errors.Is(err, sqlenv.ErrNoDatabase) {
		t.Fatalf("check over an empty root: %v, want sqlenv.ErrNoDatabase", err)
	}
	if want := dataset.DBPath(root, "battle_death"); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Try: --db-root") {
		t.Errorf("error %q does not name %s and what to do", err, want)
	}
}
