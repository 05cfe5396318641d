//go:build torch

// This integration test wraps a real PyTorch trainer. It needs Debian's
// python3-torch (apt-get install python3-torch), or RLGATE_TORCH_PYTHON
// naming an interpreter with torch, and runs on the CPU; without torch it
// fails unless RLGATE_TORCH_SKIP=1:
//
//	go test -tags torch ./examples/torch-trainer/
package torchtrainer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/reproduce"
)

// python finds an interpreter with torch: $RLGATE_TORCH_PYTHON if set, else
// /usr/bin/python3 (where Debian's python3-torch installs), else the first
// python3 on PATH. Without one the test fails rather than skips: go test
// shows a skip only with -v, and a bare "ok" would claim a check that never
// ran. RLGATE_TORCH_SKIP=1 allows the skip.
func python(t *testing.T) string {
	candidates := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("RLGATE_TORCH_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if err := exec.Command(p, "-c", "import torch").Run(); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no python3 with torch among %v: apt-get install python3-torch, or point RLGATE_TORCH_PYTHON at an interpreter that has it", candidates)
	if os.Getenv("RLGATE_TORCH_SKIP") == "1" {
		t.Skip(msg)
	}
	t.Fatal(msg + " (RLGATE_TORCH_SKIP=1 skips this test instead)")
	return ""
}

// TestTrainerThroughLedgerPassesWeightAudit trains the tiny model twice
// through the stage runner, with lr > 0 and with lr = 0 (the No-update
// control), and shows the weight audit passing on the real files: the
// trained weights changed, the No-update weights are digest-identical to
// the initial ones, and the evaluated identity is the trained one.
func TestTrainerThroughLedgerPassesWeightAudit(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	l := ledgertest.New(t)
	dir := t.TempDir()
	script, _ := filepath.Abs("train.py")
	base := filepath.Join(dir, "base")
	if out, err := exec.Command(py, script, "--init-only", "--seed", "0", "--out", base).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	train := func(stage, lr string) *runner.Result {
		out := filepath.Join(dir, stage)
		m := filepath.Join(dir, stage+".jsonl")
		res, err := runner.Execute(ctx, l, runner.Spec{
			Stage: stage, Argv: []string{py, script, "--init", base, "--lr", lr, "--steps", "10", "--seed", "0", "--out", out, "--metrics", m},
			Inputs:  []runner.Named{{Name: "base", Path: base}},
			Outputs: []runner.Named{{Name: "ckpt", Path: out}},
			Params:  map[string]string{"lr": lr},
			Metrics: []runner.MetricFile{{Path: m, Format: metrics.FormatVerl}},
			GPU:     true, Environ: os.Environ(),
		})
		if err != nil || res.Status != "ok" {
			t.Fatalf("%s: %v %+v", stage, err, res)
		}
		if res.MetricPoints != 40 {
			t.Errorf("%s: %d metric points, want 10 steps x 4 keys", stage, res.MetricPoints)
		}
		return res
	}
	rl := train("rl", "0.01")
	noupdate := train("noupdate", "0")

	evaluated := rl.Outputs["ckpt"]
	rep, err := audit.AuditWeights(ctx, audit.WeightsOptions{Base: base, Trained: filepath.Join(dir, "rl"), NoUpdate: filepath.Join(dir, "noupdate"), Evaluated: &evaluated})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Record(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Logf("%s ok=%v: %s", f.Check, f.OK, f.Message)
	}
	if !rep.OK {
		t.Fatal("the weight audit failed on a real trained/No-update pair")
	}
	if noupdate.Outputs["ckpt"] == rl.Outputs["ckpt"] {
		t.Error("the trained and No-update identities are equal")
	}
	// The lr the trainer logged is the one the run recorded.
	pts, _, err := l.Series(ctx, noupdate.Run, "actor/lr")
	if err != nil || len(pts) != 10 || pts[0].Value != 0 {
		t.Errorf("No-update lr series %v, %v", pts, err)
	}
}

// TestTrainerReproduces: a training run of the tiny model, deterministic
// under its seed, reproduces with rlgate reproduce: the same checkpoint bit
// for bit and the same metric series point by point.
func TestTrainerReproduces(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	l := ledgertest.New(t)
	dir := t.TempDir()
	script, _ := filepath.Abs("train.py")
	base, out, m := filepath.Join(dir, "base"), filepath.Join(dir, "rl"), filepath.Join(dir, "rl.jsonl")
	if out, err := exec.Command(py, script, "--init-only", "--seed", "0", "--out", base).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	res, err := runner.Execute(ctx, l, runner.Spec{
		Stage: "rl", Dir: dir, Argv: []string{py, script, "--init", "base", "--lr", "0.01", "--steps", "10", "--seed", "0", "--out", "rl", "--metrics", "rl.jsonl"},
		Inputs:  []runner.Named{{Name: "base", Path: base}},
		Outputs: []runner.Named{{Name: "ckpt", Path: out}},
		Metrics: []runner.MetricFile{{Path: m, Format: metrics.FormatVerl}},
		Environ: os.Environ(),
	})
	if err != nil || res.Status != "ok" {
		t.Fatalf("rl: %v %+v", err, res)
	}
	rs, err := reproduce.Run(ctx, l, reproduce.Options{Runs: []string{res.Run}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !rs[0].Reproduced || len(rs[0].Outputs) != 2 {
		t.Errorf("want the checkpoint and the metrics identical: %+v", rs)
	}
}
