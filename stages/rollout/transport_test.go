package rollout_test

import (
	"encoding/json"
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// allRefs reads every episode reference of a run's trajectories entries,
// unfinished ones included, and the episode each names, straight from
// the entries and blobs as docs/FORMAT.md describes them.
func allRefs(t *testing.T, l *ledger.Ledger, run string) ([]rollout.EpisodeRef, []rollout.Episode) {
	t.Helper()
	var refs []rollout.EpisodeRef
	var eps []rollout.Episode
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindTrajectories, Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		var b rollout.Trajectories
		if err := json.Unmarshal(e.Body, &b); err != nil {
			t.Fatal(err)
		}
		blob, err := l.ReadBlob(b.Blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Episodes {
			var ep rollout.Episode
			if err := json.Unmarshal(blob[r.Offset:r.Offset+r.Length], &ep); err != nil {
				t.Fatal(err)
			}
			refs, eps = append(refs, r), append(eps, ep)
		}
	}
	return refs, eps
}

// TestTransportFailuresLeaveRunUnfinished: episodes whose requests keep
// failing on the wire (dropped, reset mid-body, 500, slower than the
// timeout, malformed) are recorded unfinished and never make an ok run;
// once the endpoint works, resuming plays only them and the run equals
// one that never met a fault.
func TestTransportFailuresLeaveRunUnfinished(t *testing.T) {
	t.Parallel() // its own ledger and servers; mostly waits on the request timeout
	const kinds = 6
	var healthy atomic.Bool
	index := map[string]int{}
	for i, tk := range spiderTasks(t)[:2*kinds] {
		index[tk.ID] = i
	}
	normal := rollouttest.ThreeTurns(nil)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if healthy.Load() {
			return normal(r)
		}
		switch index[r.TaskID] % kinds {
		case 1:
			return rollouttest.Reply{Fault: rollouttest.Drop}
		case 2:
			return rollouttest.Reply{Fault: rollouttest.Reset}
		case 3:
			return rollouttest.Reply{Status: 500}
		case 4:
			rep := normal(r)
			rep.Delay = time.Minute // the server stops waiting when the client gives up
			return rep
		case 5:
			if r.Turn == 1 { // fails after a turn that went well
				return rollouttest.Reply{Fault: rollouttest.Malformed}
			}
		}
		return normal(r)
	})
	l := ledgertest.New(t)
	o := options(t, "faulty", srv.URL, 2*kinds)
	o.Client.MaxAttempts, o.Client.RequestTimeout = 2, time.Second
	s, err := rollout.Play(ctx, l, o)
	if !errors.Is(err, rollout.ErrIncomplete) || !strings.Contains(err.Error(), "10 of 12 episodes unfinished") {
		t.Fatalf("error %v", err)
	}
	if s.Status != "failed" || s.Episodes != 2 || s.Unfinished != 10 || s.Ran != 12 {
		t.Errorf("summary %+v", s)
	}
	if r, _ := l.RunStatus(ctx, "faulty"); r.Status != "failed" {
		t.Errorf("run is %s", r.Status)
	}
	if recs, err := rollout.ReadRecorded(ctx, l, "faulty"); err != nil || len(recs) != 2 {
		t.Errorf("ReadRecorded: %d finished episodes, %v", len(recs), err)
	}
	refs, eps := allRefs(t, l, "faulty")
	for i, ref := range refs {
		ep := eps[i]
		last := ep.Turns[len(ep.Turns)-1]
		unfinished := index[ref.TaskID]%kinds != 0
		if ref.StopReason.Finished() == unfinished || ep.StopReason != ref.StopReason {
			t.Errorf("task %d: stop reason %s in the entry, %s in the blob", index[ref.TaskID], ref.StopReason, ep.StopReason)
		}
		if unfinished && (ref.StopReason != rollout.StopTransport || ep.Error == "" || last.Error == "" || len(last.Retried) != 1) {
			t.Errorf("task %d: unfinished episode %+v, last turn %+v", index[ref.TaskID], ep, last)
		}
	}

	healthy.Store(true)
	s, err = rollout.Play(ctx, l, o)
	if err != nil || s.Status != "ok" || !s.Resumed || s.Ran != 10 || s.Skipped != 2 || s.Episodes != 12 || s.Unfinished != 0 {
		t.Fatalf("resume: %v, %+v", err, s)
	}
	// The replay serves the finished episodes, not the failures before them.
	rp, err := rollout.NewReplay(ctx, l, "faulty")
	if err != nil {
		t.Fatal(err)
	}
	replay := httptest.NewServer(rp)
	defer replay.Close()
	o.Run = "clean"
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	o.Run, o.Endpoint = "replayed", replay.URL
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	// Failed attempts before a good reply are not what the policy saw.
	clean, policyVisible := rollouttest.Episodes(t, l, "clean"), cmpopts.IgnoreFields(rollout.Turn{}, "Retried")
	if diff := rollouttest.EpisodesDiff(clean, rollouttest.Episodes(t, l, "faulty"), policyVisible); diff != "" {
		t.Errorf("resumed run differs from one that met no fault (-clean +resumed):\n%s", diff)
	}
	if diff := rollouttest.EpisodesDiff(clean, rollouttest.Episodes(t, l, "replayed"), policyVisible); diff != "" {
		t.Errorf("replay of the resumed run differs (-clean +replayed):\n%s", diff)
	}
}

// TestProbe: an endpoint that cannot be used is refused before a run is
// recorded; one without a models route is used.
func TestProbe(t *testing.T) {
	l := ledgertest.New(t)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": "bad key"}`, http.StatusUnauthorized)
	}))
	defer locked.Close()
	loading := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": "loading"}`, http.StatusServiceUnavailable)
	}))
	defer loading.Close()
	for _, c := range []struct{ name, endpoint, cause string }{
		{"refused", rollouttest.Refusing(t) + "/v1", "connection refused"},
		{"scheme", "notaurl", "unsupported protocol scheme"},
		{"key", locked.URL + "/v1/chat/completions", "status 401"},
		{"loading", loading.URL, "status 503"},
	} {
		o := options(t, c.name, c.endpoint, 2)
		s, err := rollout.Play(ctx, l, o)
		if !errors.Is(err, rollout.ErrEndpoint) || !strings.Contains(err.Error(), c.cause) || s != nil {
			t.Errorf("%s: %v, %+v", c.name, err, s)
		}
		if _, err := l.RunStatus(ctx, c.name); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s: a run was recorded: %v", c.name, err)
		}
	}
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	srv.HideModels()
	if s, err := rollout.Play(ctx, l, options(t, "nomodels", srv.URL, 2)); err != nil || s.Status != "ok" || srv.Probes.Load() != 1 {
		t.Errorf("no models route: %v, %+v, %d probes", err, s, srv.Probes.Load())
	}
}

// TestServerGoneMidRun: the server goes away after the probe, so every
// request after the first is refused; the run ends failed with every
// episode unfinished, and resuming against a server that came back (at
// another address: the endpoint may change on resume) plays them all.
func TestServerGoneMidRun(t *testing.T) {
	var gone *rollouttest.Server
	gone = rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		gone.Listener.Close() // new connections are refused from now on
		return rollouttest.Reply{Fault: rollouttest.Drop}
	})
	l := ledgertest.New(t)
	o := options(t, "gone", gone.URL, 6)
	o.Client.MaxAttempts = 2
	s, err := rollout.Play(ctx, l, o)
	if !errors.Is(err, rollout.ErrIncomplete) || !strings.Contains(err.Error(), "6 of 6 episodes unfinished") || s.Status != "failed" {
		t.Fatalf("%v, %+v", err, s)
	}
	refused := 0
	_, eps := allRefs(t, l, "gone")
	for _, ep := range eps {
		if strings.Contains(ep.Error, "connection refused") {
			refused++
		}
	}
	if len(eps) != 6 || refused < 5 {
		t.Errorf("%d unfinished episodes recorded, %d of them refused", len(eps), refused)
	}
	back := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	o.Endpoint = back.URL
	if s, err := rollout.Play(ctx, l, o); err != nil || s.Status != "ok" || s.Ran != 6 || s.Episodes != 6 {
		t.Fatalf("resume: %v, %+v", err, s)
	}
}
