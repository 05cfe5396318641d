package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/workflow/evaluate"
)

// truthTaskIndex is the position of a Spider task in the import, from its
// id ("spider-0007").
func truthTaskIndex(t *testing.T, id string) int {
	i, err := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
	if err != nil {
		t.Errorf("task id %q", id)
	}
	return i
}

// truthRunRow returns a run's row and its run.end body, or fails the test.
func truthRunRow(t *testing.T, ldir, run string) (ledger.Run, map[string]any) {
	t.Helper()
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.RunStatus(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if r.EndedSeq != nil {
		e, err := l.EntryBySeq(context.Background(), *r.EndedSeq)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
	}
	return r, body
}

// truthFlaky is an endpoint that, until healthy is set, resets the
// connection on every request for tasks 1, 4, 7, ... and answers 503 to
// every request for tasks 2, 5, 8, ...; tasks 0, 3, 6, ... are always
// answered, as every task is once healthy is set.
func truthFlaky(t *testing.T) (*rollouttest.Server, *atomic.Bool) {
	var healthy atomic.Bool
	normal := rollouttest.ThreeTurns(nil)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if !healthy.Load() {
			switch truthTaskIndex(t, r.TaskID) % 3 {
			case 1:
				return rollouttest.Reply{Fault: rollouttest.Drop}
			case 2:
				return rollouttest.Reply{Status: 503}
			}
		}
		return normal(r)
	})
	return srv, &healthy
}

// TestRolloutTruthUnusableEndpoint: an endpoint nobody listens on, or one
// that is not a URL, is refused before any episode, naming the cause, and
// leaves no run behind; the same command against a working server then
// plays the run.
func TestRolloutTruthUnusableEndpoint(t *testing.T) {
	ldir, data := spiderLedger(t)
	for _, c := range []struct{ name, endpoint, cause string }{
		{"refused", rollouttest.Refusing(t) + "/v1", "connection refused"},
		{"notaurl", "notaurl", "unsupported protocol scheme"},
	} {
		args := []string{"--ledger", ldir, "rollout", "--tasks", data, "--endpoint", c.endpoint, "--model", "m", "--run", c.name, "--limit", "3"}
		code, out, errOut := rlgate(t, args...)
		if code != exitError || !strings.Contains(errOut, c.cause) || !strings.Contains(errOut, "Try:") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d naming %q", c.name, code, out, errOut, exitError, c.cause)
		}
		l, err := ledger.Open(context.Background(), ldir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.RunStatus(context.Background(), c.name)
		l.Close()
		if !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s: the refused rollout left a run: %v", c.name, err)
		}
	}

	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	code, out, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL+"/v1", "--model", "m", "--run", "refused",
		"--limit", "3", "--json")
	var s rollout.Summary
	if code != exitOK || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("against a working server: exit %d: %s%s", code, out, errOut)
	}
	if s.Status != "ok" || s.Resumed || s.Ran != 3 || s.StopReasons[rollout.StopSolution] != 3 {
		t.Errorf("against a working server: %+v", s)
	}
}

// TestRolloutTruthNoModelsRoute: a server that answers 404 to /v1/models
// (some do) is used: the probe checks the transport, not the route.
func TestRolloutTruthNoModelsRoute(t *testing.T) {
	ldir, data := spiderLedger(t)
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	srv.HideModels()
	code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL, "--model", "m", "--run", "r", "--limit", "2")
	if code != exitOK {
		t.Errorf("no /v1/models route: exit %d: %s", code, errOut)
	}
}

// TestRolloutTruthTransportFailures: episodes that end on a transport
// failure leave the run failed (exit 1, the count said); the same command
// against a working server plays only those and ends ok, with the same
// episodes as a run that never met a fault.
func TestRolloutTruthTransportFailures(t *testing.T) {
	ldir, data := spiderLedger(t)
	srv, healthy := truthFlaky(t)
	args := func(run string) []string {
		return []string{"--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL + "/v1", "--model", "scripted", "--run", run,
			"--limit", "6", "--n", "2", "--max-attempts", "2", "--json"}
	}
	code, out, errOut := rlgate(t, args("flaky")...)
	var s rollout.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("exit %d: %v: %s%s", code, err, out, errOut)
	}
	if code != exitError || s.Status != "failed" || s.Episodes != 4 || s.Unfinished != 8 || s.Ran != 12 || s.StopReasons[rollout.StopSolution] != 4 {
		t.Errorf("with transport failures: exit %d, %+v", code, s)
	}
	if !strings.Contains(errOut, "8 of 12 episodes") || !strings.Contains(errOut, "run the same command again") {
		t.Errorf("stderr does not give the count and what to do: %q", errOut)
	}
	r, end := truthRunRow(t, ldir, "flaky")
	if reason, _ := end["reason"].(string); r.Status != "failed" || !strings.Contains(reason, "8 of 12 episodes") || end["unfinished"] != 8.0 {
		t.Errorf("run %s, run.end %v", r.Status, end)
	}

	healthy.Store(true)
	code, out, errOut = rlgate(t, args("flaky")...)
	s = rollout.Summary{}
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != exitOK {
		t.Fatalf("resume: exit %d: %v: %s", code, err, errOut)
	}
	if s.Status != "ok" || !s.Resumed || s.Ran != 8 || s.Skipped != 4 || s.Episodes != 12 || s.Unfinished != 0 {
		t.Errorf("resume: %+v", s)
	}
	if r, _ := truthRunRow(t, ldir, "flaky"); r.Status != "ok" {
		t.Errorf("resumed run is %s", r.Status)
	}
	if code, _, errOut := rlgate(t, args("clean")...); code != exitOK {
		t.Fatal(errOut)
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if diff := cmp.Diff(rollouttest.Episodes(t, l, "clean"), rollouttest.Episodes(t, l, "flaky")); diff != "" {
		t.Errorf("resumed run differs from one that met no fault (-clean +resumed):\n%s", diff)
	}
}

// TestRolloutTruthMissingTasks: --tasks naming nothing says so, and what
// to give.
func TestRolloutTruthMissingTasks(t *testing.T) {
	ldir, _ := spiderLedger(t)
	code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", "/nonexistent", "--endpoint", "http://127.0.0.1:1", "--model", "m", "--run", "r")
	if code != exitUsage || !strings.Contains(errOut, "/nonexistent does not exist") || !strings.Contains(errOut, "rlgate data import") || strings.Contains(errOut, "is a file") {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// TestRolloutTruthFailedRunClosed: a rollout whose recording fails closes
// its run as failed with the error, so the next command does not take it
// for a killed one.
func TestRolloutTruthFailedRunClosed(t *testing.T) {
	ldir, data := spiderLedger(t)
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	// Blobs are written through blobs/tmp; a file in its place makes every
	// trajectories blob fail to be written.
	tmp := filepath.Join(ldir, "blobs", "tmp")
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", srv.URL, "--model", "m", "--run", "broken", "--limit", "2")
	if code != exitError || !strings.Contains(errOut, "record trajectories") {
		t.Errorf("exit %d: %q", code, errOut)
	}
	r, end := truthRunRow(t, ldir, "broken")
	if reason, _ := end["reason"].(string); r.Status != "failed" || !strings.Contains(reason, "record trajectories") {
		t.Errorf("run %s, run.end %v", r.Status, end)
	}
}

// TestEvalTruthIncomplete: eval does not grade a rollout with unfinished
// episodes unless told --allow-incomplete; then the grading counts them
// wrong, says so, and records that it did.
func TestEvalTruthIncomplete(t *testing.T) {
	ldir, data := spiderLedger(t)
	srv, _ := truthFlaky(t)
	args := []string{"--ledger", ldir, "eval", "--tasks", data, "--endpoint", srv.URL, "--model", "scripted", "--run", "ev",
		"--limit", "6", "--metric", "spider", "--max-attempts", "1"}
	code, _, errOut := rlgate(t, args...)
	if code != exitError || !strings.Contains(errOut, "--allow-incomplete") {
		t.Errorf("eval of an incomplete rollout: exit %d: %q", code, errOut)
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RunStatus(context.Background(), "ev.spider-greedy"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("an incomplete rollout was graded: %v", err)
	}
	l.Close()

	code, out, errOut := rlgate(t, append(args, "--allow-incomplete", "--json")...)
	var s evaluate.EvalSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != exitOK {
		t.Fatalf("--allow-incomplete: exit %d: %v: %s", code, err, errOut)
	}
	if !s.AllowIncomplete || s.Unfinished != 4 || s.Total != 6 || s.Correct > 2 || s.RolloutSummary.Status != "failed" {
		t.Errorf("--allow-incomplete: %+v", s.TrajectorySummary)
	}
	for _, it := range s.Items {
		if truthTaskIndex(t, it.TaskID)%3 != 0 && (it.Correct || it.Verdict != "pred-error" || it.StopReason != rollout.StopTransport) {
			t.Errorf("unfinished task graded %+v", it)
		}
	}
	if code, out, _ := rlgate(t, "--ledger", ldir, "show", fmt.Sprint(s.StartSeq)); code != exitOK ||
		!strings.Contains(out, `"allow_incomplete": true`) || !strings.Contains(out, `"unfinished_episodes": 4`) {
		t.Errorf("the grading run's start does not record the incomplete rollout:\n%s", out)
	}
	code, out, _ = rlgate(t, append(args, "--allow-incomplete", "--grade-run", "ev-text")...)
	if code != exitOK || !strings.Contains(out, "incomplete rollout: 4 of 6 episodes unfinished") {
		t.Errorf("text summary: exit %d: %s", code, out)
	}
}
