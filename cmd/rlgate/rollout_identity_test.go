package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/workflow/serve"
)

// servePolicy runs rlgate serve-policy --ckpt ckpt on a free port until
// the test ends and returns the endpoint it prints.
func servePolicy(t *testing.T, ckpt string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"rlgate", "serve-policy", "--ckpt", ckpt, "--addr", "127.0.0.1:0", "--json"}, w, io.Discard)
		w.Close()
	}()
	t.Cleanup(func() { stop(); <-done })
	var s serve.Endpoint
	err := json.NewDecoder(r).Decode(&s)
	go io.Copy(io.Discard, r)
	if err != nil {
		t.Fatalf("serve-policy %s: %v", ckpt, err)
	}
	return s.URL
}

// ledgerHead is what rlgate head prints.
func ledgerHead(t *testing.T, ldir string) string {
	t.Helper()
	code, out, errOut := rlgate(t, "--ledger", ldir, "head")
	if code != exitOK {
		t.Fatalf("head: exit %d: %s", code, errOut)
	}
	return out
}

// recordedIdentity reads the model identity and its source from a
// rollout's run.start.
func recordedIdentity(t *testing.T, ldir, run string) [2]string {
	t.Helper()
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := rollout.ReadStart(context.Background(), l, run)
	if err != nil {
		t.Fatal(err)
	}
	if st.ModelIdentity == nil {
		return [2]string{"", st.IdentitySource}
	}
	return [2]string{st.ModelIdentity.String(), st.IdentitySource}
}

// TestPlayingCommandsCheckServedIdentity (issue 21, case 7): rollout, eval
// and synth against serve-policy of one checkpoint with --model-identity
// of another, or against a fleet serving two checkpoints, exit 2 naming
// both identities and the endpoint, and the ledger head stays where it
// was. Without --model-identity the served identity is recorded as the
// server's; a server that reports none records the assertion as asserted.
func TestPlayingCommandsCheckServedIdentity(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	dir := t.TempDir()
	rl2, rl2ID := policyInit(t, dir, "1")
	sft, sftID := policyInit(t, dir, "2")
	if rl2ID == sftID {
		t.Fatalf("two seeds gave one identity %s", rl2ID)
	}
	rl2URL, sftURL := servePolicy(t, rl2), servePolicy(t, sft)
	common := []string{"--tasks", data, "--model", refpolicy.ModelName, "--limit", "3"}
	head := ledgerHead(t, ldir)
	for _, c := range []struct {
		name string
		args []string
		says []string
	}{
		{"rollout", append([]string{"rollout", "--endpoint", rl2URL, "--model-identity", sftID, "--run", "r"}, common...),
			[]string{"endpoint " + rl2URL + " serves model " + rl2ID, "--model-identity names " + sftID, "Try: --model-identity " + rl2ID}},
		{"eval", append([]string{"eval", "--endpoint", rl2URL, "--model-identity", sftID, "--run", "e", "--metric", "spider"}, common...),
			[]string{"serves model " + rl2ID, "--model-identity names " + sftID}},
		{"synth", append([]string{"synth", "--endpoint", rl2URL, "--model-identity", sftID, "--out", filepath.Join(dir, "synth")}, common[:4]...),
			[]string{"serves model " + rl2ID, "--model-identity names " + sftID}},
		{"fleet", append([]string{"rollout", "--endpoint", rl2URL, "--endpoint", sftURL, "--run", "f"}, common...),
			[]string{"endpoint " + rl2URL + " serves model " + rl2ID, "endpoint " + sftURL + " serves " + sftID, "Try: "}},
	} {
		code, out, errOut := rlgate(t, append([]string{"--ledger", ldir}, c.args...)...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2: %s%s", c.name, code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n") // progress, then the error
		for _, s := range append(c.says, "rlgate: rollout ", ": model identity refused: ") {
			if !strings.Contains(lines[len(lines)-1], s) {
				t.Errorf("%s: the error line does not say %q: %s", c.name, s, errOut)
			}
		}
		if now := ledgerHead(t, ldir); now != head {
			t.Errorf("%s: refused, yet the head moved from %s to %s", c.name, head, now)
		}
	}

	silent := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	for _, c := range []struct {
		run  string
		args []string
		want [2]string
	}{
		{"served", []string{"--endpoint", rl2URL, "--model", refpolicy.ModelName}, [2]string{rl2ID, rollout.IdentityServer}},
		{"confirmed", []string{"--endpoint", sftURL, "--model", refpolicy.ModelName, "--model-identity", sftID}, [2]string{sftID, rollout.IdentityServer}},
		{"asserted", []string{"--endpoint", silent.URL, "--model", "scripted", "--model-identity", sftID}, [2]string{sftID, rollout.IdentityAsserted}},
	} {
		args := append([]string{"--ledger", ldir, "rollout", "--tasks", data, "--limit", "3", "--run", c.run}, c.args...)
		if code, _, errOut := rlgate(t, args...); code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.run, code, errOut)
		}
		if d := cmp.Diff(c.want, recordedIdentity(t, ldir, c.run)); d != "" {
			t.Errorf("%s: recorded identity, source (-want +got):\n%s", c.run, d)
		}
	}
}

// gateIdentitySources: with the rl evaluation played against an endpoint
// that reports the rl model's identity and the others against the
// experiment's scripted endpoint, which reports none, the identity audit
// states per evaluation that rl's identity was reported by the endpoint
// and the others' only asserted (both pass), and the report's lineage
// marks each model identity server or asserted.
func gateIdentitySources(t *testing.T, x *gateExperiment) {
	served := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	served.ReportModels(fmt.Sprintf(`{"object": "list", "data": [{"id": "rl", "object": "model", "identity": %q}]}`, x.identity["rl"]))
	scripted := x.endpoint
	x.endpoint = served.URL
	x.evalRun(t, "rl", "ev-rl-served", x.data, x.identity["rl"])
	x.endpoint = scripted
	want := map[string]string{"base": rollout.IdentityAsserted, "sft": rollout.IdentityAsserted, "rl": rollout.IdentityServer, "noupdate": rollout.IdentityAsserted}

	code, out, errOut := rlgate(t, "--ledger", x.ledger, "audit", "identity", "--runs", x.runs, "--train", x.train, "--json")
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); code != exitOK || err != nil {
		t.Fatalf("audit identity: exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	said := map[string]string{rollout.IdentityServer: "(reported by the endpoint)", rollout.IdentityAsserted: "(asserted with --model-identity, not confirmed by the endpoint)"}
	got := map[string]string{}
	for _, f := range r.Findings {
		if f.Check != audit.CheckEvaluatedIsBase && f.Check != audit.CheckEvaluatedIsTrained {
			continue
		}
		label, _, _ := strings.Cut(f.Message, ":")
		ev, _ := f.Evidence.(map[string]any)
		source, _ := ev["source"].(string)
		got[label] = source
		if !strings.Contains(f.Message, said[source]) {
			t.Errorf("%s: the finding does not say %q: %s", label, said[source], f.Message)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("identity sources in the audit's evidence (-want +got):\n%s", d)
	}

	dir := reportWrite(t, x.ledger, "--runs", x.runs, "--train", x.train, "--format", "md,json")
	rep := reportJSON(t, dir)
	got = map[string]string{}
	for _, row := range rep.Lineage {
		if row.Name == "model_identity" {
			got[row.Label] = row.Source
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("identity sources in the report's lineage (-want +got):\n%s", d)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, line := range strings.Split(string(md), "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 7 && strings.HasPrefix(strings.TrimSpace(cells[6]), "model_identity") {
			shown[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[6])
		}
	}
	for label, source := range want {
		want[label] = "model_identity (" + source + ")"
	}
	if d := cmp.Diff(want, shown); d != "" {
		t.Errorf("model identities in report.md's lineage (-want +got):\n%s", d)
	}
}

// demoIdentitySources reads where each evaluation of the demo in dir got
// its model identity: the demo plays them against serve-policy, which
// reports it, so each should be the server's.
func demoIdentitySources(t *testing.T, dir string) map[string]string {
	t.Helper()
	l, err := ledger.OpenReadOnly(context.Background(), filepath.Join(dir, ledger.DefaultDir))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[string]string{}
	for _, label := range demo.Labels {
		st, err := rollout.ReadStart(context.Background(), l, demo.Options{}.EvalRun(label))
		if err != nil {
			t.Fatal(err)
		}
		out[label] = st.Source()
	}
	return out
}
