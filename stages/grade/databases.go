package grade

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// DatabaseCheck is what a command found of the databases it runs on: each
// one's digest as hashed now, checked against the digest its import
// recorded, and, once a grader has used it, the SQLite that executed the
// queries (3.43 changed how SUM and AVG round, and official verdicts
// depend on it). A grading records it in its run.start entry.
type DatabaseCheck struct {
	Root    string                   `json:"db_root"`
	Digests map[string]ledger.Digest `json:"databases"` // db_id -> digest
	// Mismatches are databases whose digest differs from the import's,
	// used anyway because the caller allowed it (--allow-db-mismatch).
	Mismatches    []DatabaseMismatch `json:"database_mismatches,omitempty"`
	SQLiteVersion string             `json:"sqlite_version,omitempty"`
}

// DatabaseMismatch is a database whose bytes are not those imported.
type DatabaseMismatch struct {
	DBID     string        `json:"db_id"`
	Path     string        `json:"path"`
	Recorded ledger.Digest `json:"recorded"`
	Actual   ledger.Digest `json:"actual"`
}

// CheckDatabases hashes, on all cores, every database the import recorded
// in man at its place under root, and compares each with the recorded
// digest (see compare). When progress is not nil it hears that the check
// runs and what it found.
func CheckDatabases(ctx context.Context, man *dataset.Manifest, root string, allowMismatch bool, progress io.Writer) (*DatabaseCheck, error) {
	ids := databaseIDs(man)
	start := time.Now()
	if progress != nil {
		fmt.Fprintf(progress, "rlgate: checking %d databases under %s against the digests recorded at import\n", len(ids), root)
	}
	missing := func(id string, err error) error {
		return &ledger.Error{Op: "check database " + id, Err: fmt.Errorf("%w: %w", sqlenv.ErrNoDatabase, err),
			Hint: fmt.Sprintf("--db-root DIR holding <db_id>/<db_id>.sqlite (the import read %s)", man.DBRoot)}
	}
	// The first missing database in order is named before any is hashed:
	// the parallel hashing stops at whichever error comes first.
	for _, id := range ids {
		if _, err := os.Stat(dataset.DBPath(root, id)); err != nil {
			return nil, missing(id, err)
		}
	}
	got := make([]ledger.Digest, len(ids))
	err := ledger.ForEach(ctx, len(ids), func(ctx context.Context, i int) error {
		d, _, err := manifests.HashFile(ctx, dataset.DBPath(root, ids[i]))
		if err != nil {
			return missing(ids[i], err)
		}
		got[i] = d
		return nil
	})
	if err != nil {
		return nil, err
	}
	digests := make(map[string]ledger.Digest, len(ids))
	for i, id := range ids {
		digests[id] = got[i]
	}
	c, err := compare(man, root, digests, allowMismatch)
	if err == nil && progress != nil {
		fmt.Fprintf(progress, "rlgate: %d databases checked in %s; %d differ from the import\n", len(ids), time.Since(start).Round(time.Millisecond), len(c.Mismatches))
	}
	return c, err
}

// compare checks digests (db_id -> digest hashed now) against man's. A
// changed database (a corrupted copy, another release) is an error naming
// the file and both digests, unless allowMismatch, when it is listed in
// the check instead.
func compare(man *dataset.Manifest, root string, digests map[string]ledger.Digest, allowMismatch bool) (*DatabaseCheck, error) {
	ids := databaseIDs(man)
	c := &DatabaseCheck{Root: root, Digests: digests}
	for _, id := range ids {
		if d := digests[id]; d != man.Databases[id] {
			c.Mismatches = append(c.Mismatches, DatabaseMismatch{DBID: id, Path: dataset.DBPath(root, id), Recorded: man.Databases[id], Actual: d})
		}
	}
	if n := len(c.Mismatches); n > 0 && !allowMismatch {
		m := c.Mismatches[0]
		return nil, &ledger.Error{Op: "check database " + m.DBID, Path: m.Path,
			Err:  fmt.Errorf("%w: digest %s, but the import recorded %s (%d of %d databases differ)", ErrDatabaseChanged, m.Actual, m.Recorded, n, len(ids)),
			Hint: "restore the databases the import read, or re-import from these; grade and eval take --allow-db-mismatch to use them anyway, recording the mismatch"}
	}
	return c, nil
}

func databaseIDs(man *dataset.Manifest) []string {
	ids := make([]string, 0, len(man.Databases))
	for id := range man.Databases {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Databases is CheckDatabases through the grader: databases it already
// knows (from UseDatabases, or an earlier file of the same command) are
// not hashed again. The grader then trusts the check's digests, and the
// check names the grader's SQLite version.
func (g *Grader) Databases(ctx context.Context, man *dataset.Manifest, root string, allowMismatch bool, progress io.Writer) (*DatabaseCheck, error) {
	digests := map[string]ledger.Digest{}
	g.mu.Lock()
	for _, id := range databaseIDs(man) {
		if d, ok := g.known[g.abs(dataset.DBPath(root, id))]; ok {
			digests[id] = d
		}
	}
	g.mu.Unlock()
	var c *DatabaseCheck
	var err error
	if len(digests) == len(man.Databases) {
		c, err = compare(man, root, digests, allowMismatch)
	} else {
		c, err = CheckDatabases(ctx, man, root, allowMismatch, progress)
	}
	if err != nil {
		return nil, err
	}
	g.UseDatabases(c)
	return c, nil
}

// UseDatabases makes the grader trust the digests c hashed, so no
// database is hashed twice in one command, and records in c the SQLite
// version the grader executes with (none when c checked no database).
func (g *Grader) UseDatabases(c *DatabaseCheck) {
	g.mu.Lock()
	for id, d := range c.Digests {
		path := g.abs(dataset.DBPath(c.Root, id))
		e := &digestEntry{}
		e.once.Do(func() { e.d = d })
		g.digests[path], g.known[path] = e, d
	}
	g.mu.Unlock()
	if len(c.Digests) > 0 {
		c.SQLiteVersion = g.exec.SQLiteVersion()
	}
}

// abs is path made absolute, as the grader keys databases; a path that
// cannot be made absolute stays as it is and is refused when opened.
func (g *Grader) abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
