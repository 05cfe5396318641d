package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// fleetServers starts three scripted endpoints; the first answers 500 to
// every request after its 3rd. (After its 15th, it once served only 13 of
// a loaded machine's 90 requests, the other two being quicker to answer,
// and never failed; now any 8 drain it.)
func fleetServers(t *testing.T) []string {
	var served atomic.Int64
	normal := rollouttest.ThreeTurns(nil)
	bad := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if served.Add(1) > 3 {
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
// first endpoint failing after its third request, prints the drain on stderr when it
// happens and a line per endpoint in the summary, the drained one marked.
// What the run records is workflow/evaluate's TestRolloutFleetDrains.
func TestFleetRolloutCommand(t *testing.T) {
	t.Parallel()
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
}
