package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// taskIndex is the position of a Spider task in the import, from its id
// ("spider-0007").
func taskIndex(t *testing.T, id string) int {
	i, err := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
	if err != nil {
		t.Errorf("task id %q", id)
	}
	return i
}

// flaky is an endpoint that, until healthy is set, resets the connection
// on every request for tasks 1, 4, 7, ... and answers 503 to every
// request for tasks 2, 5, 8, ...; tasks 0, 3, 6, ... are always answered,
// as every task is once healthy is set.
func flaky(t *testing.T) (*rollouttest.Server, *atomic.Bool) {
	var healthy atomic.Bool
	normal := rollouttest.ThreeTurns(nil)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if !healthy.Load() {
			switch taskIndex(t, r.TaskID) % 3 {
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

// TestRolloutUnusableEndpoint: an endpoint nobody listens on, or one that
// is not a URL, is refused before any episode, naming the cause, and
// leaves no run behind; the same rollout against a working server then
// plays the run.
func TestRolloutUnusableEndpoint(t *testing.T) {
	ldir, data := newLedger(t), spiderData(t)
	for _, c := range []struct{ name, endpoint, cause string }{
		{"refused", rollouttest.Refusing(t) + "/v1", "connection refused"},
		{"notaurl", "notaurl", "unsupported protocol scheme"},
	} {
		s, err := Rollout(context.Background(), play(ldir, data, c.endpoint, c.name, 3))
		if s != nil || err == nil || isUsage(err) || !strings.Contains(err.Error(), c.cause) || !strings.Contains(err.Error(), "Try:") {
			t.Errorf("%s: summary %+v, error %v; want an error naming %q", c.name, s, err, c.cause)
		}
		if _, _, err := runStatus(t, ldir, c.name); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s: the refused rollout left a run: %v", c.name, err)
		}
	}

	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	s, err := Rollout(context.Background(), play(ldir, data, srv.URL+"/v1", "refused", 3))
	if err != nil {
		t.Fatalf("against a working server: %v", err)
	}
	if s.Status != "ok" || s.Resumed || s.Ran != 3 || s.StopReasons[rollout.StopSolution] != 3 {
		t.Errorf("against a working server: %+v", s)
	}
}

// TestRolloutNoModelsRoute: a server that answers 404 to /v1/models (some
// do) is used: the probe checks the transport, not the route.
func TestRolloutNoModelsRoute(t *testing.T) {
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	srv.HideModels()
	if _, err := Rollout(context.Background(), play(newLedger(t), spiderData(t), srv.URL, "r", 2)); err != nil {
		t.Errorf("no /v1/models route: %v", err)
	}
}

// TestRolloutTransportFailures: episodes that end on a transport failure
// leave the run failed, the count said; the same rollout against a
// working server plays only those and ends ok, with the same episodes as
// a run that never met a fault.
func TestRolloutTransportFailures(t *testing.T) {
	ldir, data := newLedger(t), spiderData(t)
	srv, healthy := flaky(t)
	opts := func(run string) PlayOptions {
		o := withSamples(play(ldir, data, srv.URL+"/v1", run, 6), 2)
		o.MaxAttempts = 2
		return o
	}
	s, err := Rollout(context.Background(), opts("flaky"))
	if !errors.Is(err, rollout.ErrIncomplete) || s == nil || s.Status != "failed" || s.Episodes != 4 || s.Unfinished != 8 || s.Ran != 12 || s.StopReasons[rollout.StopSolution] != 4 {
		t.Fatalf("with transport failures: %v, %+v", err, s)
	}
	if !strings.Contains(err.Error(), "8 of 12 episodes") || !strings.Contains(err.Error(), "run the same command again") {
		t.Errorf("the error does not give the count and what to do: %v", err)
	}
	r, end, _ := runStatus(t, ldir, "flaky")
	if reason, _ := end["reason"].(string); r.Status != "failed" || !strings.Contains(reason, "8 of 12 episodes") || end["unfinished"] != 8.0 {
		t.Errorf("run %s, run.end %v", r.Status, end)
	}

	healthy.Store(true)
	s, err = Rollout(context.Background(), opts("flaky"))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if s.Status != "ok" || !s.Resumed || s.Ran != 8 || s.Skipped != 4 || s.Episodes != 12 || s.Unfinished != 0 {
		t.Errorf("resume: %+v", s)
	}
	if r, _, _ := runStatus(t, ldir, "flaky"); r.Status != "ok" {
		t.Errorf("resumed run is %s", r.Status)
	}
	if _, err := Rollout(context.Background(), opts("clean")); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, ldir)
	defer l.Close()
	if diff := cmp.Diff(rollouttest.Episodes(t, l, "clean"), rollouttest.Episodes(t, l, "flaky")); diff != "" {
		t.Errorf("resumed run differs from one that met no fault (-clean +resumed):\n%s", diff)
	}
}

// TestRolloutMissingTasks: tasks naming nothing is a usage error that
// says so, and what to give.
func TestRolloutMissingTasks(t *testing.T) {
	_, err := Rollout(context.Background(), play(newLedger(t), "/nonexistent", "http://127.0.0.1:1", "r", 0))
	if !isUsage(err) || !strings.Contains(err.Error(), "/nonexistent does not exist") || !strings.Contains(err.Error(), "rlgate data import") || strings.Contains(err.Error(), "is a file") {
		t.Errorf("missing tasks: %v", err)
	}
}

// TestRolloutFailedRunClosed: a rollout whose recording fails closes its
// run as failed with the error, so the next command does not take it for
// a killed one.
func TestRolloutFailedRunClosed(t *testing.T) {
	ldir, data := newLedger(t), spiderData(t)
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
	if _, err := Rollout(context.Background(), play(ldir, data, srv.URL, "broken", 2)); err == nil || !strings.Contains(err.Error(), "record trajectories") {
		t.Errorf("recording fails: %v", err)
	}
	r, end, _ := runStatus(t, ldir, "broken")
	if reason, _ := end["reason"].(string); r.Status != "failed" || !strings.Contains(reason, "record trajectories") {
		t.Errorf("run %s, run.end %v", r.Status, end)
	}
}

// TestRolloutFleetProbeRefuses: one endpoint of the fleet that nothing
// answers refuses the rollout, naming it, with nothing recorded.
func TestRolloutFleetProbeRefuses(t *testing.T) {
	ldir := newLedger(t)
	good := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	refusing := rollouttest.Refusing(t)
	o := play(ldir, spiderData(t), good.URL, "refused", 30)
	o.Endpoints = append(o.Endpoints, refusing)
	if _, err := Rollout(context.Background(), o); err == nil || !strings.Contains(err.Error(), "1 of 2 endpoints failed the probe") || !strings.Contains(err.Error(), refusing) {
		t.Errorf("fleet with a refusing endpoint: %v", err)
	}
	noRunStarted(t, ldir, "a refused fleet")
	if good.Requests.Load() != 0 {
		t.Errorf("%d requests played", good.Requests.Load())
	}
}

// TestRolloutFleetDrains: a rollout against three endpoints, the first
// answering 500 to every request after its 3rd (after its 15th, a loaded
// machine's quicker endpoints could leave it too few requests to fail),
// completes ok with every
// episode recorded once; the drained endpoint is reported in the
// progress when drained, in the summary and in run.end, which counts
// three answered requests per episode.
func TestRolloutFleetDrains(t *testing.T) {
	ldir := newLedger(t)
	var served atomic.Int64
	normal := rollouttest.ThreeTurns(nil)
	bad := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if served.Add(1) > 3 {
			return rollouttest.Reply{Status: 500}
		}
		return normal(r)
	})
	eps := []string{bad.URL, rollouttest.New(t, normal).URL + "/v1", rollouttest.New(t, normal).URL}
	o := play(ldir, spiderData(t), "", "f1", 30)
	o.Endpoints = eps
	var progress lockedBuffer
	o.Progress = &progress
	s, err := Rollout(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != "ok" || s.Episodes != 30 || len(s.Endpoints) != 3 || !s.Endpoints[0].Drained || s.Endpoints[1].Drained || s.Endpoints[2].Drained {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(progress.String(), "rlgate: rollout f1: endpoint "+eps[0]+" drained after 5 transport failures in a row (last: status 500); its requests go to the 2 left") {
		t.Errorf("no drain notice in the progress: %q", progress.String())
	}

	l := openLedger(t, ldir)
	defer l.Close()
	recorded, err := rollout.ReadEpisodes(context.Background(), l, "f1") // an episode recorded twice is an error
	if err != nil || len(recorded) != 30 {
		t.Fatalf("%d episodes recorded: %v", len(recorded), err)
	}
	r, err := l.RunStatus(context.Background(), "f1")
	if err != nil || r.Status != "ok" {
		t.Fatalf("run %+v: %v", r, err)
	}
	e, err := l.EntryBySeq(context.Background(), *r.EndedSeq)
	if err != nil {
		t.Fatal(err)
	}
	var end rollout.End
	if err := json.Unmarshal(e.Body, &end); err != nil {
		t.Fatal(err)
	}
	requests := 0
	for i, st := range end.Endpoints {
		requests += st.Requests - st.Failures
		if st.Endpoint != eps[i] || st.Drained != (i == 0) {
			t.Errorf("run.end endpoint %d: %+v", i, st)
		}
	}
	if len(end.Endpoints) != 3 || requests != 90 {
		t.Errorf("run.end endpoints %+v: %d answered requests, want 3 per episode", end.Endpoints, requests)
	}
}

// TestRolloutFlushEvery: --flush sets how often finished episodes reach
// the ledger: 10 episodes that take about a second (replies of 50 ms)
// are one trajectories entry when flushed hourly, and several at the
// default 200 ms. A duration that is not positive is a usage error that
// starts no run.
func TestRolloutFlushEvery(t *testing.T) {
	ldir, data := newLedger(t), spiderData(t)
	o := play(ldir, data, "http://127.0.0.1:1/v1", "no-flush", 3)
	o.FlushEvery = 0
	if _, err := Rollout(context.Background(), o); !isUsage(err) || !strings.Contains(err.Error(), "--flush 0s") {
		t.Errorf("--flush 0: %v, want a usage error naming --flush", err)
	}
	noRunStarted(t, ldir, "--flush 0")

	turns := rollouttest.ThreeTurns(nil)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		time.Sleep(50 * time.Millisecond)
		return turns(r)
	})
	entries := func(run string, every time.Duration) int {
		o := play(ldir, data, srv.URL+"/v1", run, 10)
		o.Concurrency, o.FlushEvery = 2, every
		if _, err := Rollout(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		l := openLedger(t, ldir)
		defer l.Close()
		n := 0
		for _, err := range l.Entries(context.Background(), ledger.Filter{Kind: records.KindTrajectories, Run: run}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	if n := entries("hourly", time.Hour); n != 1 {
		t.Errorf("%d trajectories entries for 10 episodes flushed hourly, want 1", n)
	}
	if n := entries("default", rollout.DefaultFlushEvery); n < 2 {
		t.Errorf("%d trajectories entries for 10 episodes over about a second at the default flush, want several", n)
	}
}
