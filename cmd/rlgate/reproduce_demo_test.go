//go:build reproduce

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/audit"
	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/demo"
	"github.com/rlgate/rlgate/workflow/reproduce"
)

// TestDemoReproduces runs the demo (seed 1) and then proves it with
// rlgate reproduce (demoReproduce). It holds a second full run of every
// stage, about a minute of two cores, so it is behind the reproduce tag
// (.ci/run runs it); workflow/reproduce tests each kind of output, and
// each way a reproduction differs, on small real stages in go test ./...
// (TestDemo proves that seed 1 trains the same models again).
func TestDemoReproduces(t *testing.T) {
	exe := demoExe(t)
	dir := filepath.Join(t.TempDir(), "demo")
	if _, err := demo.Run(context.Background(), demo.Options{Dir: dir, Seed: 1, Exe: exe}); err != nil {
		t.Fatalf("demo: %v", err)
	}
	demoReproduce(t, dir, exe)
	demoReproducedPolicy(t, dir)
}

// demoReproducedPolicy: the demo's gate policy with reproduced: [rl2,
// eval_rl] passes once the pipeline was reproduced, its checks saying so,
// and the verdict re-derives check for check.
func demoReproducedPolicy(t *testing.T, dir string) {
	raw, err := os.ReadFile(filepath.Join(dir, labdemo.PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "reproduced.yaml")
	if err := os.WriteFile(policy, append(raw, "reproduced: [rl2, eval_rl]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	ldir := filepath.Join(dir, ledger.DefaultDir)
	code, out, errOut := rlgate(t, "--ledger", ldir, "gate", "--policy", policy, "--json")
	var v audit.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitOK || !v.OK {
		t.Fatalf("gate: exit %d (%v), failed %v\n%s", code, err, failedChecks(v), errOut)
	}
	for _, st := range []string{"rl2", "eval_rl"} {
		if !slices.ContainsFunc(v.Checks, func(c audit.GateCheck) bool { return c.Name == "reproduced "+st && c.OK && len(c.Seqs) == 1 }) {
			t.Errorf("no passed check reproduced %s in %+v", st, v.Checks)
		}
	}
	l, err := ledger.OpenReadOnly(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	again, err := audit.Rederive(context.Background(), l, v.Seq)
	if err != nil || !again.OK || len(again.Checks) != len(v.Checks) {
		t.Errorf("the verdict re-derived: %v %+v", err, again)
	}
}

// demoReproduce: in a finished demo directory, rlgate reproduce --pipeline
// reproduces all 14 stages (the imports relocated, the evaluations as
// outcomes, every other output bit for bit, the training stages' metric
// series point by point) and records an entry for each; then the RL
// evaluation's grading reproduces by grading its trajectories again, and
// its rollout, played against its replay, sends the recorded requests.
func demoReproduce(t *testing.T, dir, exe string) {
	ldir := filepath.Join(dir, ledger.DefaultDir)
	run := func(args ...string) ([]reproduce.Result, string) {
		t.Helper()
		cmd := exec.Command(exe, append([]string{"--ledger", ldir, "reproduce", "--json"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }),
			"PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("reproduce %v: %v\n%s\n%s", args, err, out, stderr.String())
		}
		var rs []reproduce.Result
		if err := json.Unmarshal(out, &rs); err != nil {
			t.Fatalf("reproduce %v: %v: %s", args, err, out)
		}
		return rs, stderr.String()
	}
	rs, stderr := run("--pipeline", "-f", filepath.Join(dir, labdemo.PipelineFile))
	if len(rs) != 14 {
		t.Fatalf("%d stages reproduced, want 14\n%s", len(rs), stderr)
	}
	for _, r := range rs {
		if !r.Reproduced || r.Seq == 0 {
			t.Errorf("stage %s: %+v", r.Stage, r)
		}
		for _, o := range r.Outputs {
			wantAs := map[bool]string{true: reproduce.AsOutcomes}[strings.HasPrefix(r.Stage, "eval_")]
			if o.As != wantAs || o.Relocated != strings.HasPrefix(r.Stage, "import_") {
				t.Errorf("stage %s output %s: compared as %q, relocated %v", r.Stage, o.Name, o.As, o.Relocated)
			}
		}
	}
	o := labdemo.Options{Seed: 1}
	rs, _ = run(o.GradingRun("rl"), o.EvalRun("rl"))
	if len(rs) != 2 || !rs[0].Reproduced || len(rs[0].Outputs) != 1 || rs[0].Outputs[0].Name != "outcomes" {
		t.Errorf("the RL evaluation's grading: %+v", rs)
	}
	if len(rs) == 2 && (!rs[1].Reproduced || len(rs[1].Outputs) != 1 || rs[1].Outputs[0].Name != "requests") {
		t.Errorf("the RL evaluation's rollout against its replay: %+v", rs[1])
	}
}
