//go:build postgres

package main

import (
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGSecretsNeverReachTheDump: a run with secrets planted on every
// path it records, into a PostgreSQL ledger: none is in pg_dump's dump of
// the database nor in the blob directory.
func TestPGSecretsNeverReachTheDump(t *testing.T) {
	loc := ledgertest.Postgres(t)
	pgURL, blobs := pgSplit(t, loc)
	pg := []string{"--ledger", pgURL, "--blobs", blobs}
	if code, _, errOut := rlgate(t, append(pg, "init")...); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	secrets := plantedRun(t, pg, "", "--run", "p1")
	dump := ledgertest.PGDump(t, loc)
	if len(secretsIn("dump", dump, []string{"p1"})) == 0 {
		t.Fatal("the dump does not hold the run: it shows nothing")
	}
	if leaked := append(secretsIn("the dump", dump, secrets), secretsLeaked(t, blobs, secrets)...); len(leaked) > 0 {
		t.Errorf("secrets in the PostgreSQL ledger: %v", leaked)
	}
}
