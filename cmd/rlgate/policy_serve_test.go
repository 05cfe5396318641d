package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/digest"
	"github.com/rlgate/rlgate/workflow/evaluate"
)

// policyInit writes a Base checkpoint through the CLI and returns its
// directory and model identity.
func policyInit(t *testing.T, dir string, seed string) (string, string) {
	t.Helper()
	out := filepath.Join(dir, "base-"+seed)
	code, stdout, errOut := rlgate(t, "train", "init", "--out", out, "--seed", seed, "--json")
	if code != 0 {
		t.Fatalf("train init: exit %d: %s", code, errOut)
	}
	var s train.Trained
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	return out, s.ModelIdentity
}

// TestPolicyServesEvalThroughCLI serves a checkpoint (Base after a short
// GRPO run) and evaluates
// it with rlgate eval, run by serve-policy as its CMD: the real rollout
// client plays the protocol against it and the real grader grades it. The
// evaluation must agree, task by task, with the trainer's in-process play
// of the same policy, so that what GRPO optimises is what is served.
func TestPolicyServesEvalThroughCLI(t *testing.T) {
	ldir, data := spiderLedger(t)
	dir := t.TempDir()
	base, _ := policyInit(t, dir, "1")
	rl := trainRun(t, trainGRPOArgs(base, data, filepath.Join(dir, "rl"), filepath.Join(dir, "rl.jsonl"), "0.05", "1")...).Out
	t.Setenv("RLGATE_TEST_MAIN", "1") // the CMD below is this test binary acting as rlgate
	code, out, errOut := rlgate(t, "serve-policy", "--ckpt", rl, "--addr", "127.0.0.1:0", "--",
		os.Args[0], "--ledger", ldir, "eval", "--tasks", data, "--endpoint", "{endpoint}", "--model", refpolicy.ModelName,
		"--metric", "spider", "--limit", "150", "--run", "ev", "--json")
	if code != 0 {
		t.Fatalf("serve-policy -- eval: exit %d: %s", code, errOut)
	}
	var s evaluate.EvalSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("eval output: %v\n%s", err, out)
	}
	if s.Total != 150 || s.RolloutSummary.StopReasons[rollout.StopSolution] != 150 {
		t.Fatalf("eval: %d tasks graded, stop reasons %v; want 150 solutions", s.Total, s.RolloutSummary.StopReasons)
	}
	if s.Correct == 0 || s.Correct == s.Total {
		t.Errorf("the policy answered %d of %d correctly; the comparison below needs right and wrong answers", s.Correct, s.Total)
	}
	t.Logf("served policy: %d of %d correct", s.Correct, s.Total)
	served := map[string]bool{}
	for _, it := range s.Items {
		served[it.TaskID] = it.Correct
	}

	ts, err := train.LoadTasks(data, "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := refpolicy.Load(rl)
	if err != nil {
		t.Fatal(err)
	}
	env := train.NewEnv(grade.MetricSpider)
	defer env.Close()
	inProcess := map[string]bool{}
	for i := range ts {
		if _, ok := served[ts[i].ID]; !ok {
			continue
		}
		acc, err := train.Accuracy(context.Background(), env, w, ts[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		inProcess[ts[i].ID] = acc == 1
	}
	if d := cmp.Diff(served, inProcess); d != "" {
		t.Errorf("served evaluation and in-process play disagree (-served +in-process):\n%s", d)
	}
}

// TestPolicyServeRunsCMD: serve-policy -- CMD replaces {endpoint}, sets
// RLGATE_ENDPOINT and RLGATE_MODEL_IDENTITY (the checkpoint's identity,
// as rlgate ckpt digest computes it), exits with CMD's code and stops
// serving when CMD ends.
func TestPolicyServeRunsCMD(t *testing.T) {
	t.Parallel()
	base, identity := policyInit(t, t.TempDir(), "1")
	code, out, errOut := rlgate(t, "serve-policy", "--ckpt", base, "--addr", "127.0.0.1:0", "--",
		"sh", "-c", `echo "$RLGATE_ENDPOINT $RLGATE_MODEL_IDENTITY $1"; exit 7`, "sh", "{endpoint}")
	if code != 7 {
		t.Fatalf("exit %d, want CMD's 7: %s", code, errOut)
	}
	f := strings.Fields(out)
	if len(f) != 3 || f[0] != f[2] || !strings.HasPrefix(f[0], "http://127.0.0.1:") || !strings.HasSuffix(f[0], "/v1") {
		t.Fatalf("CMD saw %q; want the endpoint twice", out)
	}
	code, dig, _ := rlgate(t, "ckpt", "digest", "--json", base)
	var m digest.CheckpointDigest
	if err := json.Unmarshal([]byte(dig), &m); code != 0 || err != nil {
		t.Fatalf("ckpt digest: exit %d, %v", code, err)
	}
	if f[1] != identity || f[1] != m.Identity.String() {
		t.Errorf("RLGATE_MODEL_IDENTITY %s; train init printed %s, ckpt digest %s", f[1], identity, m.Identity)
	}
	if res, err := http.Get(f[0] + "/models"); err == nil {
		res.Body.Close()
		t.Errorf("the endpoint still answers after CMD ended (status %d)", res.StatusCode)
	}
	if code, _, _ := rlgate(t, "serve-policy", "--ckpt", base, "--addr", "127.0.0.1:0", "--", "true"); code != 0 {
		t.Errorf("CMD true: exit %d", code)
	}
	if code, _, errOut := rlgate(t, "serve-policy", "--ckpt", t.TempDir(), "--", "true"); code != exitError || !strings.Contains(errOut, "Try: rlgate train init") {
		t.Errorf("no checkpoint: exit %d, %q", code, errOut)
	}
}
