//go:build postgres

package main

import (
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGReproTeamLedger: a team's PostgreSQL ledger behind a password,
// --ledger and --blobs given once: init says where the ledger is (the URL
// without the password) and where its blobs go; repro's stages run
// rlgate commands that record into the same ledger and blob store; and
// the password is nowhere in the ledger, the stage's recorded
// environment included.
func TestPGReproTeamLedger(t *testing.T) {
	unsetEnv(t, ledger.EnvLedger)
	unsetEnv(t, ledger.EnvBlobs)
	const password = "team-horse-battery"
	c := ledgertest.StartPostgres(t)
	c.RequirePassword(password)
	pgURL, blobs := pgSplit(t, c.URL)
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("rlgate", password)
	pg := []string{"--ledger", u.String(), "--blobs", blobs}
	code, out, errOut := rlgate(t, append(pg, "init")...)
	shown := "postgres://rlgate:xxxxx@" + u.Host + u.Path
	if code != exitOK || !strings.Contains(out, "in PostgreSQL at "+shown) || !strings.Contains(out, "blobs in "+blobs) || strings.Contains(out, password) {
		t.Fatalf("init: exit %d: %s%s", code, out, errOut)
	}

	exe := demoExe(t)
	t.Setenv("PATH", filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	pdir := t.TempDir()
	gateWrite(t, filepath.Join(pdir, "notes.txt"), "lab notes\n")
	gateWrite(t, filepath.Join(pdir, "rlgate.yaml"), `stages:
  inner:
    cmd: "rlgate run --stage inner-train --run inner1 --gpu off --in notes=notes.txt -- true && rlgate head > out/head.txt"
    deps: {notes: notes.txt}
    outs: {head: out/head.txt}
    gpu: off
`)
	if code, out, errOut := rlgate(t, append(pg, "repro", "-f", filepath.Join(pdir, "rlgate.yaml"))...); code != exitOK {
		t.Fatalf("repro: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := rlgate(t, append(pg, "runs")...); code != exitOK || !strings.Contains(out, "inner1") {
		t.Errorf("the stage's own rlgate run is not in the team ledger: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, _ := rlgate(t, append(pg, "verify")...); code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify: exit %d: %s", code, out)
	}
	code, out, errOut = rlgate(t, append(pg, "log", "--json")...)
	var es []ledger.Entry
	if err := json.Unmarshal([]byte(out), &es); code != exitOK || err != nil {
		t.Fatalf("log: exit %d: %v %s", code, err, errOut)
	}
	if strings.Contains(out, password) {
		t.Error("the password is in the ledger")
	}
	recorded := map[string]string{}
	for _, e := range es {
		var start struct {
			Stage string            `json:"stage"`
			Env   map[string]string `json:"env"`
		}
		if e.Kind == records.KindRunStart && json.Unmarshal(e.Body, &start) == nil {
			recorded[start.Stage] = start.Env[ledger.EnvLedger]
		}
	}
	want := "postgres://" + ledger.Redacted + "@" + u.Host + u.Path
	for _, stage := range []string{"inner", "inner-train"} {
		if got := recorded[stage]; !strings.HasPrefix(got, want) {
			t.Errorf("stage %s recorded %s=%q, want it masked, %q...", stage, ledger.EnvLedger, got, want)
		}
	}
}
