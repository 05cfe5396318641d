//go:build postgres

package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGCLI: a PostgreSQL ledger through the CLI (--ledger URL --blobs
// DIR): init, a recorded stage with metrics, verify; then ledger copy
// SQLite -> PostgreSQL -> SQLite gives identical heads, entries and runs,
// and a clean verify at every step.
func TestPGCLI(t *testing.T) {
	pgURL, blobs := pgSplit(t, ledgertest.Postgres(t))
	pg := []string{"--ledger", pgURL, "--blobs", blobs}
	if code, out, errOut := rlgate(t, append(pg, "init")...); code != exitOK || !strings.Contains(out, "created ledger") {
		t.Fatalf("init: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := rlgate(t, append(pg, "init")...); code != exitError || !strings.Contains(errOut, "already exists") {
		t.Errorf("second init: exit %d: %s", code, errOut)
	}
	if code, _, errOut := rlgate(t, append(pg, "run", "--stage", "sft", "--run", "sft1", "--gpu", "off",
		"--metrics", "../../testdata/trainer-logs/llamafactory-trainer_log.jsonl:llamafactory", "--", "echo", "trained")...); code != exitOK {
		t.Fatal(errOut)
	}
	if code, out, _ := rlgate(t, append(pg, "verify")...); code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify: exit %d: %s", code, out)
	}
	pgRemembersBlobs(t, pgURL, blobs)

	// SQLite -> PostgreSQL (a second cluster) -> SQLite.
	src := readonlyLogLedger(t)
	pg2URL, blobs2 := pgSplit(t, ledgertest.Postgres(t))
	withBlobs := func(args ...string) (int, string, string) {
		return rlgate(t, append([]string{"--blobs", blobs2}, args...)...)
	}
	copyLedgerCopy(t, withBlobs, src, pg2URL)
	if code, out, _ := withBlobs("--ledger", pg2URL, "verify"); code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify the PostgreSQL copy: exit %d: %s", code, out)
	}
	_, wantHead, _ := rlgate(t, "--ledger", src, "head")
	if _, head, _ := withBlobs("--ledger", pg2URL, "head"); head != wantHead || head == "" {
		t.Errorf("PostgreSQL copy's head %q, source's %q", head, wantHead)
	}
	back := filepath.Join(t.TempDir(), "back")
	copyLedgerCopy(t, withBlobs, pg2URL, back)
	copySameLedger(t, src, back)
}

// pgRemembersBlobs: the ledger at pgURL, made with --blobs blobs,
// remembers its store: commands without --blobs use it.
func pgRemembersBlobs(t *testing.T, pgURL, blobs string) {
	t.Helper()
	_, wantHead, _ := rlgate(t, "--ledger", pgURL, "--blobs", blobs, "head")
	if code, head, errOut := rlgate(t, "--ledger", pgURL, "head"); code != exitOK || head != wantHead {
		t.Errorf("head without --blobs: exit %d: %q, want %q: %s", code, head, wantHead, errOut)
	}
	if code, out, errOut := rlgate(t, "--ledger", pgURL, "verify"); code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify without --blobs: exit %d: %s%s", code, out, errOut)
	}
}

// pgSplit splits a ledger URL from ledgertest.Postgres into the URL and
// its local directory, as a user gives them (--ledger, --blobs).
func pgSplit(t *testing.T, loc string) (string, string) {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	blobs := q.Get("blobs")
	q.Del("blobs")
	u.RawQuery = q.Encode()
	return u.String(), blobs
}
