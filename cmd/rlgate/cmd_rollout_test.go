package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// spiderLedger makes a ledger with the Spider dev set imported, as a new
// user would, and returns the ledger and dataset directories. About
// twenty tests start from it, so the test binary imports once (as
// buildGateExperiment builds its experiment once) and hands each caller a
// copy of the ledger; the imported dataset directory, which every caller
// only reads, is shared.
func spiderLedger(t *testing.T) (string, string) {
	t.Helper()
	spiderOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlgate-spider-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		atBinaryEnd(func() { os.RemoveAll(dir) })
		spiderImported.ledger, spiderImported.data = spiderLedgerIn(t, dir)
	})
	if spiderImported.ledger == "" {
		t.Fatal("the Spider import failed in an earlier test; see its failure")
	}
	ldir := filepath.Join(t.TempDir(), "ledger")
	if err := os.CopyFS(ldir, os.DirFS(spiderImported.ledger)); err != nil {
		t.Fatal(err)
	}
	return ldir, spiderImported.data
}

var (
	spiderOnce     sync.Once
	spiderImported struct{ ledger, data string }
)

// spiderLedgerIn is spiderLedger under dir, for a fixture that outlives
// the test that builds it.
func spiderLedgerIn(t *testing.T, dir string) (string, string) {
	t.Helper()
	ldir, data := filepath.Join(dir, "ledger"), filepath.Join(dir, "spider")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	sp := "../../testdata/spider"
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "import", "spider", "--dev", sp+"/dev.json", "--gold", sp+"/dev_gold.sql",
		"--tables", sp+"/tables.json", "--db-root", sp+"/database", "--out", data); code != 0 {
		t.Fatal(errOut)
	}
	return ldir, data
}

func TestRolloutCommand(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	args := []string{"--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL + "/v1", "--model", "scripted",
		"--run", "r1", "--limit", "30", "--n", "2", "--temperature", "0.7", "--seed", "7", "--json"}
	code, out, errOut := rlgate(t, args...)
	if code != 0 {
		t.Fatalf("rollout: exit %d: %s", code, errOut)
	}
	var s rollout.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != "ok" || s.Episodes != 60 || s.StopReasons[rollout.StopSolution] != 60 || s.Tasks != 30 || s.Samples != 2 {
		t.Fatalf("summary %+v", s)
	}
	if !strings.Contains(errOut, "rlgate: rollout r1: 60/60 episodes") {
		t.Errorf("no progress line on stderr: %q", errOut)
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	start, err := rollout.ReadStart(context.Background(), l, "r1")
	l.Close()
	if err != nil || start.Protocol.Sampling.Temperature != 0.7 || start.Protocol.Sampling.Seed != 7 || start.DBRoot == "" {
		t.Fatalf("start %+v: %v", start, err)
	}

	// Again: complete, nothing played.
	code, out, _ = rlgate(t, args[:len(args)-1]...)
	if code != 0 || !strings.Contains(out, "rollout r1 is complete: 60 episodes recorded") {
		t.Errorf("rerun: exit %d: %q", code, out)
	}
	// The same run id under another protocol is refused.
	if code, _, errOut := rlgate(t, append(args[:len(args)-1], "--top-p", "0.9")...); code != exitError || !strings.Contains(errOut, "different settings") {
		t.Errorf("other sampling: exit %d: %q", code, errOut)
	}

	// A tasks file carrying gold is refused before anything is played.
	leaky := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(leaky, []byte(`{"id": "x-0", "index": 0, "dataset": "x", "db_id": "singer", "question": "q", "schema": "s", "sql": "SELECT 1"}`+"\n"), 0o644)
	if code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", leaky, "--db-root", "../../testdata/spider/database",
		"--endpoint", srv.URL, "--model", "m", "--run", "leak"); code != exitError || !strings.Contains(errOut, "tasks file carries gold") {
		t.Errorf("gold in tasks: exit %d: %q", code, errOut)
	}
	for _, bad := range [][]string{
		{"--concurrency", "0"},
		{"--n", "0"},
		{"--top-p", "1.5"},
		{"--no-such-flag"},
	} {
		if code, _, errOut := rlgate(t, append(args[:len(args)-1], bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d (%q), want %d", bad, code, errOut, exitUsage)
		}
	}
	if code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", filepath.Join(data, "tasks.jsonl"), "--endpoint", srv.URL,
		"--model", "m", "--run", "x"); code != exitUsage || !strings.Contains(errOut, "--db-root") {
		t.Errorf("tasks file without --db-root: exit %d: %q", code, errOut)
	}
	if code, _, errOut := rlgate(t, append(args[:len(args)-1], "--api-key-env", "RLGATE_TEST_NO_SUCH_KEY")...); code != exitError || !strings.Contains(errOut, "RLGATE_TEST_NO_SUCH_KEY") {
		t.Errorf("empty api key: exit %d: %q", code, errOut)
	}
}

// TestRolloutSIGKILLResume kills a real rollout process mid-run and runs
// the command again: the run ends with the same episodes as one that was
// never interrupted, none twice.
func TestRolloutSIGKILLResume(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		rep := rollouttest.ThreeTurns(nil)(r)
		rep.Delay = 15 * time.Millisecond
		return rep
	})
	args := func(run string) []string {
		return []string{"--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL, "--model", "scripted", "--run", run,
			"--limit", "80", "--n", "2", "--concurrency", "4"}
	}
	cmd := rlgateProcess(t, args("killed")...)
	var childErr bytes.Buffer
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	recorded := func() int {
		l, err := ledger.Open(context.Background(), ldir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		recs, err := rollout.ReadRecorded(context.Background(), l, "killed")
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	deadline := time.Now().Add(30 * time.Second)
	for recorded() < 20 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("nothing recorded within 30s: %s", childErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	before := recorded()
	t.Logf("%d of 160 episodes recorded when the rollout was killed", before)
	if before >= 160 {
		t.Fatalf("the rollout finished before it was killed (%d episodes); slow the endpoint down", before)
	}

	cmd = rlgateProcess(t, append(args("killed"), "--json")...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("resume: %v: %s", err, out)
	}
	var s rollout.Summary
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	if !s.Resumed || s.Skipped != before || s.Ran != 160-before || s.Episodes != 160 || s.Status != "ok" {
		t.Fatalf("resumed: %+v (recorded before: %d)", s, before)
	}
	if code, _, errOut := rlgate(t, args("uninterrupted")...); code != 0 {
		t.Fatal(errOut)
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, b := rollouttest.Episodes(t, l, "killed"), rollouttest.Episodes(t, l, "uninterrupted")
	if diff := rollouttest.EpisodesDiff(b, a); len(a) != 160 || diff != "" {
		t.Errorf("killed and resumed run (%d episodes) differs from an uninterrupted one (%d; -uninterrupted +killed):\n%s", len(a), len(b), diff)
	}
	runs, _ := l.Runs(context.Background())
	for _, r := range runs {
		if r.Run == "killed" && r.Status != "ok" {
			t.Errorf("run killed is %s", r.Status)
		}
	}
	rep, err := l.Verify(context.Background(), ledger.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}
