package rollout_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// TestRolloutMissingDatabase: a task whose database is not under the root
// is refused before anything is recorded, with the one sentinel for a
// missing database (sqlenv.ErrNoDatabase) that the executor and the
// grading's database check return too, and a line naming the path.
func TestRolloutMissingDatabase(t *testing.T) {
	l := ledgertest.New(t)
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	root := t.TempDir()
	o := options(t, "r-nodb", srv.URL, 3)
	o.DBRoot = root
	o.DBPath = func(id string) string { return filepath.Join(root, id, id+".sqlite") }
	_, err := rollout.Play(ctx, l, o)
	if !errors.Is(err, sqlenv.ErrNoDatabase) {
		t.Fatalf("rollout over a root without databases: %v, want sqlenv.ErrNoDatabase", err)
	}
	if want := o.DBPath(o.Tasks[0].DBID); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Try: --db-root") {
		t.Errorf("error %q does not name %s and what to do", err, want)
	}
	runs, err := l.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Errorf("a refused rollout left runs %+v", runs)
	}
}
