//go:build postgres

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGFaultCLIServerStopped: a stage whose command stops the PostgreSQL
// server (SIGQUIT to the postmaster: an immediate shutdown) while rlgate
// run records it: rlgate exits 1 with one error line naming the ledger and
// what to do, not the driver's detail; so does the next command. After a
// restart the run is closed as interrupted, verify is clean (nothing
// half-written: chain and derived tables agree) and recording goes on.
func TestPGFaultCLIServerStopped(t *testing.T) {
	pg := ledgertest.StartPostgres(t)
	pgURL, blobs := pgSplit(t, pg.URL)
	args := func(more ...string) []string { return append([]string{"--ledger", pgURL, "--blobs", blobs}, more...) }
	if code, _, errOut := rlgate(t, args("init")...); code != exitOK {
		t.Fatal(errOut)
	}
	pid := pg.PostmasterPID()
	stop := fmt.Sprintf("kill -QUIT %d; while kill -0 %d 2>/dev/null; do sleep 0.05; done; echo stopped", pid, pid)
	code, _, errOut := rlgate(t, args("run", "--stage", "rl", "--run", "rl-1", "--gpu", "off", "--", "sh", "-c", stop)...)
	pgfaultWantServerGone(t, "run whose command stopped the server", code, errOut, pgURL)
	code, _, errOut = rlgate(t, args("hash", "--record", "../../testdata/spider/database")...)
	pgfaultWantServerGone(t, "hash --record with the server stopped", code, errOut, pgURL)

	pg.Start()
	if code, out, errOut := rlgate(t, args("verify")...); code != exitOK || !strings.Contains(out, "0 errors") {
		t.Errorf("verify after the restart: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := rlgate(t, args("run", "--stage", "rl", "--run", "rl-2", "--gpu", "off", "--", "true")...); code != exitOK {
		t.Errorf("run after the restart: exit %d: %s", code, errOut)
	}
	code, out, errOut := rlgate(t, args("runs", "--json")...)
	if code != exitOK {
		t.Fatal(errOut)
	}
	var runs []struct{ Run, Status string }
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("runs --json: %v: %s", err, out)
	}
	status := map[string]string{}
	for _, r := range runs {
		status[r.Run] = r.Status
	}
	if status["rl-1"] != "interrupted" || status["rl-2"] != "ok" {
		t.Errorf("runs after the restart: %v, want rl-1 interrupted (its recorder lost the server) and rl-2 ok", status)
	}
	if code, out, _ := rlgate(t, args("verify")...); code != exitOK || !strings.Contains(out, "0 errors") {
		t.Errorf("final verify: exit %d: %s", code, out)
	}
}

// pgfaultWantServerGone checks a command's exit 1 and its one-line error
// naming the ledger, the lost server and the hint.
func pgfaultWantServerGone(t *testing.T, what string, code int, errOut, pgURL string) {
	t.Helper()
	msg := strings.TrimSpace(errOut)
	t.Logf("%s: %s", what, msg)
	if code != exitError || !strings.Contains(msg, pgURL+": the PostgreSQL server went away or cannot be reached (") ||
		!strings.Contains(msg, "Try: check that the PostgreSQL server is running") ||
		strings.Contains(msg, "\n") || strings.Contains(msg, "SQLSTATE") || strings.Contains(msg, "failed to") {
		t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line naming %s, the lost server and what to do", what, code, errOut, pgURL)
	}
}
