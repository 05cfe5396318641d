package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// unfinishing is an endpoint that answers 503 to every request for the
// tasks whose id does not end in 0 or 3: of the first 6 Spider tasks, 4
// are left unfinished when every attempt fails.
func unfinishing(t *testing.T) *rollouttest.Server {
	normal := rollouttest.ThreeTurns(nil)
	return rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if !strings.HasSuffix(r.TaskID, "0") && !strings.HasSuffix(r.TaskID, "3") {
			return rollouttest.Reply{Status: 503}
		}
		return normal(r)
	})
}

// TestRolloutFailedCommand: a rollout left with unfinished episodes exits
// 1, still prints its summary (--json), and says on stderr how many and
// what to do. What the run records and how it resumes is
// workflow/evaluate's TestRolloutTransportFailures.
func TestRolloutFailedCommand(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := unfinishing(t)
	code, out, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL+"/v1", "--model", "scripted", "--run", "flaky",
		"--limit", "6", "--n", "2", "--max-attempts", "1", "--json")
	var s rollout.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("exit %d: %v: %s%s", code, err, out, errOut)
	}
	if code != exitError || s.Status != "failed" || s.Episodes != 4 || s.Unfinished != 8 {
		t.Errorf("with transport failures: exit %d, %+v", code, s)
	}
	if !strings.Contains(errOut, "8 of 12 episodes") || !strings.Contains(errOut, "run the same command again") {
		t.Errorf("stderr does not give the count and what to do: %q", errOut)
	}
}

// TestRolloutTruthMissingTasks: --tasks naming nothing says so, and what
// to give, as a usage error (exit 2).
func TestRolloutTruthMissingTasks(t *testing.T) {
	t.Parallel()
	ldir, _ := spiderLedger(t)
	code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", "/nonexistent", "--endpoint", "http://127.0.0.1:1", "--model", "m", "--run", "r")
	if code != exitUsage || !strings.Contains(errOut, "/nonexistent does not exist") || !strings.Contains(errOut, "rlgate data import") || strings.Contains(errOut, "is a file") {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// TestEvalTruthIncomplete: eval of a rollout with unfinished episodes
// prints the rollout's summary and exits 1 pointing at
// --allow-incomplete; with it, the text summary says how many episodes
// were counted wrong. What is graded and recorded is workflow/evaluate's
// TestEvalIncomplete.
func TestEvalTruthIncomplete(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := unfinishing(t)
	args := []string{"--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "scripted", "--run", "ev",
		"--limit", "6", "--metric", "spider", "--max-attempts", "1"}
	code, out, errOut := rlgate(t, args...)
	if code != exitError || !strings.Contains(errOut, "--allow-incomplete") || !strings.Contains(out, "rlgate: rollout ev failed: 2 of 6 episodes finished, 4 unfinished") {
		t.Errorf("eval of an incomplete rollout: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut = rlgate(t, append(args, "--allow-incomplete")...)
	if code != exitOK || !strings.Contains(out, "incomplete rollout: 4 of 6 episodes unfinished") {
		t.Errorf("text summary: exit %d: %s%s", code, out, errOut)
	}
}
