//go:build postgres

package main

import (
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestUIPostgres: the pages of TestReport's experiment, copied into
// PostgreSQL, are served from it with the same figures as the commands
// give on it (TestUI's checks).
func TestUIPostgres(t *testing.T) {
	x := buildReportExperiment(t)
	loc := ledgertest.Postgres(t)
	pgURL, blobs := pgSplit(t, loc)
	copyLedgerCopy(t, func(args ...string) (int, string, string) {
		return rlgate(t, append([]string{"--blobs", blobs}, args...)...)
	}, x.ledger, pgURL)
	uiPages(t, x, loc)
}
