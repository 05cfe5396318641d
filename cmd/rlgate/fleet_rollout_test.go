package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// fleetServers starts three scripted endpoints; the first answers 500 to
// every request after its 15th.
func fleetServers(t *testing.T) []string {
	var served atomic.Int64
	normal := rollouttest.ThreeTurns(nil)
	bad := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if served.Add(1) > 15 {
			return rollouttest.Reply{Status: 500}
		}
		return normal(r)
	})
	return []string{bad.URL, rollouttest.New(t, normal).URL + "/v1", rollouttest.New(t, normal).URL}
}

// fleetArgs is a rollout of 30 tasks against the endpoints, each given
// with its own --endpoint.
func fleetArgs(ldir, data, run string, endpoints []string) []string {
	args := []string{"--ledger", ldir, "rollout", "--tasks", data, "--model", "scripted", "--run", run, "--limit", "30"}
	for _, e := range endpoints {
		args = append(args, "--endpoint", e)
	}
	return args
}

// TestFleetRolloutCommand: rollout with --endpoint given three times, the
// first endpoint failing half-way, completes ok with every episode
// recorded once; the drained endpoint is reported on stderr when drained,
// in the summary (text and --json) and in run.end.
func TestFleetRolloutCommand(t *testing.T) {
	ldir, data := spiderLedger(t)
	eps := fleetServers(t)
	code, out, errOut := rlgate(t, fleetArgs(ldir, data, "f1", eps)...)
	if code != exitOK || !strings.Contains(out, "rollout f1 ran: 30 of 30 episodes recorded") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "rlgate: rollout f1: endpoint "+eps[0]+" drained after 5 transport failures in a row (last: status 500); its requests go to the 2 left") {
		t.Errorf("no drain notice on stderr: %q", errOut)
	}
	lines := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "rlgate: endpoint "); ok {
			name, stats, _ := strings.Cut(rest, ": ")
			lines[name] = stats
		}
	}
	for i, e := range eps {
		stats, ok := lines[e]
		if drained := strings.Contains(stats, "DRAINED after 5 failures in a row (last: status 500)"); !ok || drained != (i == 0) {
			t.Errorf("endpoint %s: summary line %q (drained %v)", e, stats, drained)
		}
	}

	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
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
	l.Close()

	code, out, errOut = rlgate(t, append(fleetArgs(ldir, data, "f2", fleetServers(t)), "--json")...)
	var s rollout.Summary
	if err := json.Unmarshal([]byte(out), &s); code != exitOK || err != nil {
		t.Fatalf("--json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if s.Status != "ok" || s.Episodes != 30 || len(s.Endpoints) != 3 || !s.Endpoints[0].Drained || s.Endpoints[1].Drained || s.Endpoints[2].Drained {
		t.Errorf("--json summary %+v", s)
	}
}
