package main

import (
	"encoding/json"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// gateAuditCommands runs the audits one by one, and the gate under a
// policy file that names everything, on an experiment whose rl evaluation
// sampled at temperature 0.7 while the others sampled at 0.
func gateAuditCommands(t *testing.T, x *gateExperiment) {
	x.evalRun(t, "rl", "ev-rl-t07", x.data, x.identity["rl"], "--temperature", "0.7")

	code, out, errOut := rlgate(t, "--ledger", x.ledger, "audit", "budget", "--runs", x.runs, "--json")
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("audit budget: exit %d: %v %s", code, err, errOut)
	}
	if code != exitCheckFailed || r.OK || r.Failed != 1 || r.Audit != audit.AuditBudget {
		t.Fatalf("audit budget: exit %d, report %+v", code, r)
	}
	var protocol audit.Finding
	for _, f := range r.Findings {
		if !f.OK {
			protocol = f
		}
	}
	// The difference is listed side by side, evaluation by evaluation.
	var diffs []audit.Difference
	raw, _ := json.Marshal(protocol.Evidence)
	if err := json.Unmarshal(raw, &diffs); err != nil {
		t.Fatal(err)
	}
	want := []audit.Difference{{Field: "sampling.temperature", Values: map[string]string{"base": "0", "sft": "0", "rl": "0.7", "noupdate": "0"}}}
	if protocol.Check != audit.CheckSameProtocol || !cmp.Equal(want, diffs) {
		t.Errorf("%s: differences (-want +got):\n%s", protocol.Check, cmp.Diff(want, diffs))
	}
	rlStart := gateLog(t, x.ledger, "ev-rl-t07", records.KindRunStart)[0].Seq
	if !slices.Contains(protocol.Seqs, rlStart) {
		t.Errorf("evidence %v does not cite the rl rollout's start, entry %d", protocol.Seqs, rlStart)
	}
	// Recorded as an audit.budget entry with the same body.
	e := gateLog(t, x.ledger, "", "audit.budget")
	if len(e) != 1 || e[0].Seq != r.Seq {
		t.Errorf("audit.budget entries %d, want one at %d", len(e), r.Seq)
	}

	// The text form: one table, a summary, exit 3; training passes.
	code, out, _ = rlgate(t, "--ledger", x.ledger, "audit", "budget", "--runs", x.runs)
	if code != exitCheckFailed || !strings.Contains(out, "FAIL") || !strings.Contains(out, "budget audit failed 1 of") {
		t.Errorf("audit budget text: exit %d:\n%s", code, out)
	}
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "audit", "training", "--train", x.train); code != exitOK || !strings.Contains(out, "training audit passed") {
		t.Errorf("audit training: exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "audit", "training", "--train", "rl=no-such-run"); code != exitError || !strings.Contains(errOut, "no-such-run") {
		t.Errorf("audit training of a missing run: exit %d: %s", code, errOut)
	}

	// Gold mutation: re-played against the recorded replies, 5 tasks send
	// the recorded requests byte for byte while the mutated gold flips
	// their grades; against a live endpoint that answers otherwise (a
	// probe first), the requests differ and the check fails, citing the
	// recorded episodes.
	rlRun := strings.Split(strings.Split(x.runs, ",")[2], "=")[1]
	code, out, errOut = rlgate(t, "--ledger", x.ledger, "audit", "gold", "--runs", "rl="+rlRun, "--mutate", "5", "--json")
	var g audit.Report
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("audit gold --mutate: exit %d: %v %s", code, err, errOut)
	}
	mutation := gateFinding(t, g, audit.CheckGoldMutation)
	var ev audit.MutationEvidence
	raw, _ = json.Marshal(mutation.Evidence)
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if code != exitOK || !mutation.OK || len(ev.Tasks) != 5 || ev.Episodes != 5 || len(ev.Differing) != 0 || ev.GradesChanged != 5 || ev.Endpoint != "replay" {
		t.Errorf("gold mutation against the replay: exit %d, %s, evidence %+v", code, mutation.Message, ev)
	}
	probing := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if r.Turn == 0 {
			return rollouttest.Reply{Content: "<think>t</think><sql>SELECT 1</sql>"}
		}
		return rollouttest.Reply{Content: "<think>t</think><solution>SELECT 1</solution>"}
	})
	baseRun := strings.Split(strings.Split(x.runs, ",")[0], "=")[1]
	code, out, _ = rlgate(t, "--ledger", x.ledger, "audit", "gold", "--runs", "base="+baseRun, "--mutate", "3", "--mutate-endpoint", probing.URL, "--json")
	g = audit.Report{}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	mutation = gateFinding(t, g, audit.CheckGoldMutation)
	trajectories := gateLog(t, x.ledger, strings.TrimSuffix(baseRun, ".spider-greedy"), "trajectories")[0].Seq
	if code != exitCheckFailed || mutation.OK || !slices.Contains(mutation.Seqs, trajectories) {
		t.Errorf("gold mutation against a live endpoint that answers otherwise: exit %d, %s, seqs %v (want %d among them)", code, mutation.Message, mutation.Seqs, trajectories)
	}

	// A policy file names the runs, claims and audits: the gate needs
	// nothing else, and passes without the budget audit it leaves out.
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	var b strings.Builder
	b.WriteString("name: rl-only\nclaims: [\"rl > base\"]\naudits: [training, identity]\nalpha: 0.01\nruns:\n")
	for _, p := range strings.Split(x.runs, ",") {
		label, run, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "  %s: %s\n", label, run)
	}
	b.WriteString("train:\n")
	for _, p := range strings.Split(x.train, ",") {
		label, run, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "  %s: %s\n", label, run)
	}
	if err := os.WriteFile(policy, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = rlgate(t, "--ledger", x.ledger, "gate", "--policy", policy, "--json")
	var v audit.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("gate --policy: exit %d: %v %s", code, err, errOut)
	}
	if code != exitOK || !v.OK || v.Policy.Name != "rl-only" || len(v.Claims) != 1 || v.Policy.Alpha != 0.01 || len(v.Audits) != 2 {
		t.Errorf("gate --policy: exit %d, verdict ok %v, policy %+v, %d claims, %d audits", code, v.OK, v.Policy, len(v.Claims), len(v.Audits))
	}

	// A policy with a field the gate does not know is refused, naming it.
	if err := os.WriteFile(policy, []byte("claims: [\"rl > base\"]\nthreshold: 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "gate", "--policy", policy); code != exitUsage || !strings.Contains(errOut, "threshold") {
		t.Errorf("unknown policy field: exit %d: %s", code, errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "gate"); code != exitUsage || !strings.Contains(errOut, "--runs") {
		t.Errorf("gate without runs: exit %d: %s", code, errOut)
	}
}

// gateFinding returns the report's one finding of check.
func gateFinding(t *testing.T, r audit.Report, check string) audit.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("%s audit has no %s finding: %+v", r.Audit, check, r.Findings)
	return audit.Finding{}
}
