package rollout_test

import (
	"encoding/json"
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// fleetFailingAfter is an endpoint that plays ThreeTurns for its first n
// requests and answers 500 to every one after.
func fleetFailingAfter(t *testing.T, n int64) *rollouttest.Server {
	var served atomic.Int64
	normal := rollouttest.ThreeTurns(nil)
	return rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if served.Add(1) > n {
			return rollouttest.Reply{Status: 500}
		}
		return normal(r)
	})
}

// fleetOptions returns options for the first n Spider tasks against the
// endpoints.
func fleetOptions(t *testing.T, run string, n int, endpoints ...string) rollout.Options {
	o := options(t, run, "", n)
	o.Endpoint, o.Endpoints = "", endpoints
	return o
}

// fleetTally counts, from the episodes as recorded, the attempts each
// endpoint was sent: every failed attempt is in a turn's Retried, the
// last is the turn itself. It is what the endpoint counters must add up
// to.
func fleetTally(eps []rollout.Episode) map[string]rollout.EndpointStats {
	out := map[string]rollout.EndpointStats{}
	count := func(name string, failed, retry bool) {
		s := out[name]
		s.Endpoint = name
		s.Requests++
		if failed {
			s.Failures++
		}
		if retry {
			s.Retries++
		}
		out[name] = s
	}
	for _, ep := range eps {
		for _, tr := range ep.Turns {
			for i, a := range tr.Retried {
				count(a.Endpoint, true, i > 0)
			}
			count(tr.Endpoint, tr.Error != "" && ep.StopReason == rollout.StopTransport, len(tr.Retried) > 0)
		}
	}
	return out
}

// fleetEnd reads the run.end body of a run.
func fleetEnd(t *testing.T, l *ledger.Ledger, run string) rollout.End {
	t.Helper()
	r, err := l.RunStatus(ctx, run)
	if err != nil || r.EndedSeq == nil {
		t.Fatalf("run %s: %+v, %v", run, r, err)
	}
	e, err := l.EntryBySeq(ctx, *r.EndedSeq)
	if err != nil {
		t.Fatal(err)
	}
	var end rollout.End
	if err := json.Unmarshal(e.Body, &end); err != nil {
		t.Fatal(err)
	}
	return end
}

// TestFleetDrainsFailingEndpoint: a rollout across three endpoints, the
// first of which answers 500 to every request after its 15th, completes
// ok with every episode recorded once, each the episode a single healthy
// endpoint plays; the failing endpoint is drained and reported; the
// counters recorded in run.end add up to the attempts recorded in the
// episodes and to what the healthy servers received.
func TestFleetDrainsFailingEndpoint(t *testing.T) {
	t.Parallel() // its own ledger and servers; mostly waits on the failing endpoint
	const tasks = 30
	l := ledgertest.New(t)
	clean := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	if _, err := rollout.Play(ctx, l, options(t, "clean", clean.URL, tasks)); err != nil {
		t.Fatal(err)
	}
	bad, good1, good2 := fleetFailingAfter(t, 15), rollouttest.New(t, rollouttest.ThreeTurns(nil)), rollouttest.New(t, rollouttest.ThreeTurns(nil))
	o := fleetOptions(t, "fleet", tasks, bad.URL, good1.URL+"/v1", good2.URL)
	s, err := rollout.Play(ctx, l, o)
	if err != nil || s.Status != "ok" || s.Episodes != tasks || s.Ran != tasks || s.Unfinished != 0 {
		t.Fatalf("%v, %+v", err, s)
	}

	refs, eps := allRefs(t, l, "fleet")
	if len(refs) != tasks {
		t.Errorf("%d episodes recorded, want each of %d once", len(refs), tasks)
	}
	policyVisible := cmpopts.IgnoreFields(rollout.Turn{}, "Retried", "Endpoint")
	if diff := rollouttest.EpisodesDiff(rollouttest.Episodes(t, l, "clean"), rollouttest.Episodes(t, l, "fleet"), policyVisible); diff != "" {
		t.Errorf("fleet run differs from one on a healthy endpoint (-clean +fleet):\n%s", diff)
	}

	names := []string{bad.URL, good1.URL + "/v1", good2.URL}
	if len(s.Endpoints) != 3 {
		t.Fatalf("endpoints %+v", s.Endpoints)
	}
	tally := fleetTally(eps)
	for i, e := range s.Endpoints {
		want := tally[names[i]]
		want.Drained = i == 0
		if diff := cmp.Diff(want, e, cmpopts.IgnoreFields(rollout.EndpointStats{}, "LatencyMS", "DrainError")); diff != "" {
			t.Errorf("endpoint %d: counters differ from the recorded attempts (-recorded +counted):\n%s", i, diff)
		}
		if e.LatencyMS == nil || e.LatencyMS.N != e.Requests {
			t.Errorf("endpoint %d: latency %+v of %d requests", i, e.LatencyMS, e.Requests)
		}
	}
	if b := s.Endpoints[0]; b.Failures < rollout.DrainAfter || b.Requests-b.Failures > 15 || !strings.Contains(b.DrainError, "status 500") {
		t.Errorf("failing endpoint %+v: want drained after 15 answers and %d failures in a row", b, rollout.DrainAfter)
	}
	for i, srv := range []*rollouttest.Server{good1, good2} {
		if got, want := srv.Requests.Load(), int64(s.Endpoints[i+1].Requests); got != want {
			t.Errorf("healthy endpoint %d received %d requests, counted %d", i+1, got, want)
		}
	}
	if end := fleetEnd(t, l, "fleet"); !cmp.Equal(s.Endpoints, end.Endpoints) {
		t.Errorf("run.end endpoints differ from the summary's:\n%s", cmp.Diff(s.Endpoints, end.Endpoints))
	}
	start, err := rollout.ReadStart(ctx, l, "fleet")
	if err != nil || start.Endpoint != names[0] || !cmp.Equal(start.Endpoints, names) {
		t.Errorf("run.start endpoint %q, endpoints %q: %v", start.Endpoint, start.Endpoints, err)
	}
	// One endpoint: run.start keeps its single endpoint, turns name none.
	if start, err := rollout.ReadStart(ctx, l, "clean"); err != nil || start.Endpoints != nil || start.Endpoint != clean.URL {
		t.Errorf("single endpoint: run.start endpoint %q, endpoints %q: %v", start.Endpoint, start.Endpoints, err)
	}
}

// TestFleetRoutesToLeastOutstanding: a slow endpoint, given first (so it
// wins every tie), gets fewer requests than the fast ones' average,
// because each request goes to the endpoint with the fewest in flight;
// routing in turn would give each a third.
func TestFleetRoutesToLeastOutstanding(t *testing.T) {
	normal := rollouttest.ThreeTurns(nil)
	slow := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		rep := normal(r)
		rep.Delay = 100 * time.Millisecond
		return rep
	})
	fast1, fast2 := rollouttest.New(t, normal), rollouttest.New(t, normal)
	l := ledgertest.New(t)
	s, err := rollout.Play(ctx, l, fleetOptions(t, "routed", 20, slow.URL, fast1.URL, fast2.URL))
	if err != nil {
		t.Fatal(err)
	}
	got := []int64{slow.Requests.Load(), fast1.Requests.Load(), fast2.Requests.Load()}
	t.Logf("requests slow, fast, fast: %v", got)
	if got[0]+got[1]+got[2] != 60 || 2*got[0] >= got[1]+got[2] {
		t.Errorf("requests slow, fast, fast: %v; want 60, fewer to the slow one than the fast ones' average", got)
	}
	for i, e := range s.Endpoints {
		if int64(e.Requests) != got[i] || e.Failures != 0 || e.Retries != 0 || e.Drained {
			t.Errorf("endpoint %d: %+v, server received %d", i, e, got[i])
		}
	}
}

// TestFleetResumesWithOtherEndpoints: a fleet whose servers all answer
// 503 drains all but the last, whose failures leave every episode
// unfinished and the run failed; the run resumes on two other endpoints,
// recorded, redacted, in run.resume, and completes.
func TestFleetResumesWithOtherEndpoints(t *testing.T) {
	down := func(*rollouttest.Request) rollouttest.Reply { return rollouttest.Reply{Status: 503} }
	d1, d2 := rollouttest.New(t, down), rollouttest.New(t, down)
	l := ledgertest.New(t)
	o := fleetOptions(t, "moved", 12, d1.URL, d2.URL)
	o.Client.MaxAttempts = 2
	s, err := rollout.Play(ctx, l, o)
	if !errors.Is(err, rollout.ErrIncomplete) || s.Status != "failed" || s.Unfinished != 12 {
		t.Fatalf("%v, %+v", err, s)
	}
	drained := 0
	for _, e := range s.Endpoints {
		if e.Drained {
			drained++
		}
	}
	if drained != 1 {
		t.Errorf("endpoints %+v: want all but the last in use drained", s.Endpoints)
	}
	if refs, _ := allRefs(t, l, "moved"); len(refs) != 12 {
		t.Errorf("%d unfinished episodes recorded, want 12", len(refs))
	}

	up1, up2 := rollouttest.New(t, rollouttest.ThreeTurns(nil)), rollouttest.New(t, rollouttest.ThreeTurns(nil))
	o.Endpoints = []string{strings.Replace(up1.URL, "http://", "http://user:hunter22@", 1), up2.URL + "/v1?api_key=sk-fleet-secret"}
	s, err = rollout.Play(ctx, l, o)
	if err != nil || s.Status != "ok" || !s.Resumed || s.Ran != 12 || s.Episodes != 12 {
		t.Fatalf("resume: %v, %+v", err, s)
	}
	want := []string{strings.Replace(up1.URL, "http://", "http://"+ledger.Redacted+"@", 1), up2.URL + "/v1?api_key=" + ledger.Redacted}
	var resumes []map[string]any
	for e, err := range l.Entries(ctx, ledger.Filter{Run: "moved"}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(e.Body), "hunter22") || strings.Contains(string(e.Body), "sk-fleet-secret") {
			t.Errorf("entry %d (%s) holds a secret: %s", e.Seq, e.Kind, e.Body)
		}
		if e.Kind == records.KindRunResume {
			var b map[string]any
			json.Unmarshal(e.Body, &b)
			resumes = append(resumes, b)
		}
	}
	_, eps := allRefs(t, l, "moved")
	lines, err := json.Marshal(eps)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(lines), "hunter22") || strings.Contains(string(lines), "sk-fleet-secret") || !strings.Contains(string(lines), `"endpoint":"`+want[0]) {
		t.Errorf("episode lines hold a secret or no redacted endpoint: %s", lines)
	}
	if len(resumes) != 1 || !cmp.Equal(resumes[0]["endpoints"], []any{want[0], want[1]}) || resumes[0]["endpoint"] != want[0] {
		t.Errorf("run.resume bodies %v; want endpoints %q", resumes, want)
	}
	if got := []string{s.Endpoints[0].Endpoint, s.Endpoints[1].Endpoint}; !cmp.Equal(got, want) {
		t.Errorf("summary endpoints %q, want %q", got, want)
	}
}

// TestFleetProbe: every endpoint of a fleet must pass the probe; one that
// cannot be used refuses the run, naming it, before anything is recorded.
// An endpoint given twice is refused too.
func TestFleetProbe(t *testing.T) {
	l := ledgertest.New(t)
	good := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	refusing := rollouttest.Refusing(t)
	for _, c := range []struct {
		name      string
		endpoints []string
		want      []string
	}{
		{"refused", []string{good.URL, refusing + "/v1"}, []string{"1 of 2 endpoints failed the probe", "connection refused", refusing}},
		{"twice", []string{good.URL, good.URL + "/v1/"}, []string{"endpoint " + good.URL + "/v1/ is given twice"}},
	} {
		s, err := rollout.Play(ctx, l, fleetOptions(t, c.name, 2, c.endpoints...))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) || s != nil {
				t.Errorf("%s: %v, %+v; want an error saying %q", c.name, err, s, w)
			}
		}
		if _, err := l.RunStatus(ctx, c.name); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s: a run was recorded: %v", c.name, err)
		}
	}
	if _, err := rollout.Play(ctx, l, fleetOptions(t, "refused", 2, good.URL, refusing)); !errors.Is(err, rollout.ErrEndpoint) {
		t.Errorf("refused: %v is not ErrEndpoint", err)
	}
	if good.Requests.Load() != 0 {
		t.Errorf("%d requests played on a refused fleet", good.Requests.Load())
	}
}

// TestFleetAbandonsInFlightOnDrain: the first endpoint hangs on its first
// two requests and answers 500 to every later one. Once those failures
// drain it, the two hanging requests are abandoned at once (not after
// their timeout) and retried on the healthy endpoints: every episode
// finishes, and their attempts on the drained endpoint are recorded as
// abandoned.
func TestFleetAbandonsInFlightOnDrain(t *testing.T) {
	var served atomic.Int64
	normal := rollouttest.ThreeTurns(nil)
	hung := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if served.Add(1) <= 2 {
			return rollouttest.Reply{Delay: time.Minute} // the server stops waiting when the client gives up
		}
		return rollouttest.Reply{Status: 500}
	})
	busy := func(r *rollouttest.Request) rollouttest.Reply {
		rep := normal(r)
		rep.Delay = 20 * time.Millisecond
		return rep
	}
	good1, good2 := rollouttest.New(t, busy), rollouttest.New(t, busy)
	l := ledgertest.New(t)
	o := fleetOptions(t, "abandon", 24, hung.URL, good1.URL, good2.URL)
	o.Concurrency, o.Client.RequestTimeout = 8, time.Minute
	s, err := rollout.Play(ctx, l, o)
	if err != nil || s.Status != "ok" || s.Episodes != 24 {
		t.Fatalf("%v, %+v", err, s)
	}
	if !s.Endpoints[0].Drained || s.Endpoints[1].Drained || s.Endpoints[2].Drained {
		t.Errorf("endpoints %+v: want the first drained", s.Endpoints)
	}
	_, eps := allRefs(t, l, "abandon")
	abandoned := 0
	for _, ep := range eps {
		for _, tr := range ep.Turns {
			for _, a := range tr.Retried {
				if a.Endpoint == hung.URL && strings.Contains(a.Error, "abandoned: the endpoint was drained") {
					abandoned++
				}
			}
		}
	}
	if abandoned != 2 {
		t.Errorf("%d attempts recorded abandoned on the drained endpoint, want its 2 hanging ones", abandoned)
	}
}
