package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/stages/jsonl"
)

// trainRun runs one train subcommand through the CLI and returns its
// summary.
func trainRun(t *testing.T, args ...string) train.Trained {
	t.Helper()
	code, out, errOut := rlgate(t, append(append([]string{"train"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("train %v: exit %d: %s", args, code, errOut)
	}
	var s train.Trained
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// trainGRPOArgs are a small GRPO run's flags.
func trainGRPOArgs(init, data, out, metrics, lr, seed string) []string {
	return []string{"grpo", "--init", init, "--tasks", data, "--out", out, "--metrics-out", metrics,
		"--steps", "6", "--batch", "8", "--group-size", "8", "--lr", lr, "--seed", seed}
}

// trainMetrics reads a veRL JSONL metrics file.
func trainMetrics(t *testing.T, path string) []map[string]float64 {
	t.Helper()
	type line struct {
		Step int                `json:"step"`
		Data map[string]float64 `json:"data"`
	}
	ls, err := jsonl.Read[line](path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]float64
	for i, l := range ls {
		if l.Step != i+1 || l.Data["training/global_step"] != float64(i+1) {
			t.Fatalf("%s line %d: step %d, global_step %v", path, i+1, l.Step, l.Data["training/global_step"])
		}
		out = append(out, l.Data)
	}
	return out
}

func trainFileBytes(t *testing.T, ckpt string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ckpt, refpolicy.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTrainNoUpdateKeepsEveryTensor: GRPO with --lr 0 (the No-update
// control) plays, grades and computes gradients like a real run, logs lr
// 0, and writes a checkpoint byte-identical to its input; with lr > 0 the
// same run changes it.
func TestTrainNoUpdateKeepsEveryTensor(t *testing.T) {
	t.Parallel()
	_, data := spiderLedger(t)
	dir := t.TempDir()
	base, baseID := policyInit(t, dir, "1")
	nu := trainRun(t, trainGRPOArgs(base, data, filepath.Join(dir, "nu"), filepath.Join(dir, "nu.jsonl"), "0", "1")...)
	if nu.ModelIdentity != baseID || !bytes.Equal(trainFileBytes(t, base), trainFileBytes(t, nu.Out)) {
		t.Errorf("lr 0: identity %s, Base %s; the files differ", nu.ModelIdentity, baseID)
	}
	ms := trainMetrics(t, filepath.Join(dir, "nu.jsonl"))
	for i, m := range ms {
		if m["actor/lr"] != 0 || m["training/n_groups"] != 8 || m["actor/grad_norm"] == 0 && m["training/n_zero_adv_groups"] < 8 {
			t.Errorf("lr 0 step %d: %v", i+1, m)
		}
	}
	rl := trainRun(t, trainGRPOArgs(base, data, filepath.Join(dir, "rl"), filepath.Join(dir, "rl.jsonl"), "0.05", "1")...)
	if rl.ModelIdentity == baseID {
		t.Errorf("lr 0.05 left the identity at Base's %s", baseID)
	}
	// training into its own input is refused
	if code, _, errOut := rlgate(t, append([]string{"train"}, trainGRPOArgs(base, data, base+"/", filepath.Join(dir, "self.jsonl"), "0.05", "1")...)...); code != exitUsage || !strings.Contains(errOut, "is an input checkpoint") {
		t.Errorf("--out = --init: exit %d, %q", code, errOut)
	}
	// a wrong --db-root is refused before anything is trained or written
	wrong := filepath.Join(dir, "wrong")
	code, _, errOut := rlgate(t, append(append([]string{"train"}, trainGRPOArgs(base, data, wrong, filepath.Join(dir, "wrong.jsonl"), "0.05", "1")...), "--db-root", t.TempDir())...)
	if code != exitError || !strings.Contains(errOut, "Try: --db-root") {
		t.Errorf("wrong --db-root: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(wrong); !os.IsNotExist(err) {
		t.Errorf("wrong --db-root left %s behind (%v)", wrong, err)
	}
}

// TestTrainSameSeedSameBytes: GRPO, with a KL term as the demo's RL
// stage 2 has, writes identical checkpoint bytes and metrics under the
// same seed, and other bytes under another. That init does is
// lab/refpolicy/train's TestJobs; that SFT does, TestDemo's (demoSame:
// the SFT stage of two demos with seed 1 writes the same checkpoint and
// metrics).
func TestTrainSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	_, data := spiderLedger(t)
	dir := t.TempDir()
	a, _ := policyInit(t, dir, "3")
	var rl [3][]byte
	var ms [3][]map[string]float64
	for i, seed := range []string{"5", "5", "6"} {
		out, mf := filepath.Join(dir, "rl"+strconv.Itoa(i)), filepath.Join(dir, "rl"+strconv.Itoa(i)+".jsonl")
		trainRun(t, append(trainGRPOArgs(a, data, out, mf, "0.05", seed), "--kl-ref", a, "--kl-coef", "0.001")...)
		rl[i], ms[i] = trainFileBytes(t, out), trainMetrics(t, mf)
	}
	if !bytes.Equal(rl[0], rl[1]) {
		t.Error("grpo --seed 5 twice: the checkpoints differ")
	}
	if bytes.Equal(rl[0], rl[2]) {
		t.Error("grpo --seed 5 and --seed 6 wrote the same checkpoint")
	}
	m0, _ := json.Marshal(ms[0])
	m1, _ := json.Marshal(ms[1])
	if !bytes.Equal(m0, m1) {
		t.Error("grpo --seed 5 twice: the metrics differ")
	}
}

// TestTrainMetricsPassTheAudits runs GRPO and its No-update control as
// stages through the ledger (rlgate run --metrics FILE:verl) and audits
// them: the training and reward audits pass with the right labels, and
// the training audit fails a No-update control labelled as the RL run,
// and an RL run labelled as the No-update control.
func TestTrainMetricsPassTheAudits(t *testing.T) {
	ldir, data := spiderLedger(t)
	dir := t.TempDir()
	base, _ := policyInit(t, dir, "1")
	t.Setenv("RLGATE_TEST_MAIN", "1") // the stage command is this test binary acting as rlgate
	for _, run := range []struct{ id, lr string }{{"rl1", "0.05"}, {"nu", "0"}} {
		out, mf := filepath.Join(dir, run.id), filepath.Join(dir, run.id+".jsonl")
		args := append([]string{"--ledger", ldir, "run", "--stage", run.id, "--run", run.id, "--gpu", "off", "--in", "data=" + data, "--in", "base=" + base,
			"--out", "ckpt=" + out, "--param", "lr=" + run.lr, "--metrics", mf + ":verl", "--", os.Args[0], "train"}, trainGRPOArgs(base, data, out, mf, run.lr, "1")...)
		if code, _, errOut := rlgate(t, args...); code != 0 {
			t.Fatalf("run %s: exit %d: %s", run.id, code, errOut)
		}
	}
	for _, c := range []struct {
		audit, train string
		want         int
	}{
		{"training", "rl=rl1,noupdate=nu", exitOK},
		{"reward", "rl=rl1", exitOK},
		{"training", "rl=nu", exitCheckFailed},
		{"training", "noupdate=rl1", exitCheckFailed},
	} {
		code, out, errOut := rlgate(t, "--ledger", ldir, "audit", c.audit, "--train", c.train)
		t.Logf("audit %s --train %s:\n%s", c.audit, c.train, out)
		if code != c.want {
			t.Errorf("audit %s --train %s: exit %d, want %d:\n%s%s", c.audit, c.train, code, c.want, out, errOut)
		}
	}
}
