package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/lab/refpolicy/train"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/synth"
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

// TestTrainSameSeedSameBytes: init, SFT and GRPO give identical bytes
// under the same seed (and GRPO other bytes under another).
func TestTrainSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	_, data := spiderLedger(t)
	dir := t.TempDir()
	a, _ := policyInit(t, filepath.Join(dir, "a"), "3")
	b, _ := policyInit(t, filepath.Join(dir, "b"), "3")
	if !bytes.Equal(trainFileBytes(t, a), trainFileBytes(t, b)) {
		t.Fatal("train init --seed 3 twice: the checkpoints differ")
	}
	trajectories := policyRejectionSample(t, a, data, filepath.Join(dir, "traj.jsonl"), 80)
	var sft [2][]byte
	for i := range sft {
		out := filepath.Join(dir, "sft"+strconv.Itoa(i))
		trainRun(t, "sft", "--init", a, "--tasks", data, "--data", trajectories, "--out", out, "--seed", "2")
		sft[i] = trainFileBytes(t, out)
	}
	if !bytes.Equal(sft[0], sft[1]) {
		t.Error("sft --seed 2 twice: the checkpoints differ")
	}
	var rl [3][]byte
	var ms [3][]map[string]float64
	for i, seed := range []string{"5", "5", "6"} {
		out, mf := filepath.Join(dir, "rl"+strconv.Itoa(i)), filepath.Join(dir, "rl"+strconv.Itoa(i)+".jsonl")
		trainRun(t, trainGRPOArgs(a, data, out, mf, "0.05", seed)...)
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

// policyRejectionSample writes a trajectories.jsonl as cold-start
// synthesis does: each of the first n tasks is sampled up to 8 times at
// temperature 1 from the checkpoint, and the first sample whose final SQL
// passes execution match is kept.
func policyRejectionSample(t *testing.T, ckpt, data, path string, n int) string {
	t.Helper()
	ts, err := train.LoadTasks(data, "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := refpolicy.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	env := train.NewEnv(grade.MetricSpider)
	defer env.Close()
	pol := &refpolicy.Model{W: w}
	var trs []synth.Trajectory
	for i := range ts[:min(n, len(ts))] {
		for s := range 8 {
			d, _ := env.Play(context.Background(), pol, &ts[i], refpolicy.Sampler{Temperature: 1, Seed: 11, Stream: refpolicy.StreamOf(ts[i].ID + "#" + strconv.Itoa(s))})
			if r, err := env.Reward(context.Background(), &ts[i], d.Turn.Body); err != nil {
				t.Fatal(err)
			} else if r == 1 {
				trs = append(trs, synth.Trajectory{DBID: ts[i].DBID, ExampleID: ts[i].ID, SampleID: s,
					Turns: []synth.Turn{{Turn: 0, Think: d.Turn.Think, Solution: d.Turn.Body, IsFinal: true}}})
				break
			}
		}
	}
	if len(trs) == 0 {
		t.Fatal("rejection sampling kept no trajectory")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	if err := jsonl.Write(bw, trs); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// trainSplitImport imports the Spider dev questions of the named
// databases as their own dataset, as a split by database does.
func trainSplitImport(t *testing.T, ldir, name string, dbs map[string]bool) string {
	t.Helper()
	sp := "../../testdata/spider"
	var dev []map[string]any
	raw, err := os.ReadFile(sp + "/dev.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dev); err != nil {
		t.Fatal(err)
	}
	goldRaw, err := os.ReadFile(sp + "/dev_gold.sql")
	if err != nil {
		t.Fatal(err)
	}
	golds := strings.Split(strings.TrimRight(string(goldRaw), "\n"), "\n")
	var keepDev []map[string]any
	var keepGold []string
	for i, q := range dev {
		if dbs[q["db_id"].(string)] {
			keepDev = append(keepDev, q)
			keepGold = append(keepGold, golds[i])
		}
	}
	dir := t.TempDir()
	devOut, _ := json.Marshal(keepDev)
	os.WriteFile(filepath.Join(dir, "dev.json"), devOut, 0o644)
	os.WriteFile(filepath.Join(dir, "dev_gold.sql"), []byte(strings.Join(keepGold, "\n")+"\n"), 0o644)
	out := filepath.Join(dir, "import")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "import", "spider", "--name", name, "--dev", filepath.Join(dir, "dev.json"),
		"--gold", filepath.Join(dir, "dev_gold.sql"), "--tables", sp+"/tables.json", "--db-root", sp+"/database", "--out", out); code != 0 {
		t.Fatal(errOut)
	}
	return out
}

// TestTrainImprovesHeldOut trains on some databases and measures on
// others: SFT on rejection-sampled trajectories, GRPO stage 1 from SFT,
// GRPO stage 2 on the tasks stage 1 still fails with a KL term to stage
// 1; each beats Base on the held-out databases.
func TestTrainImprovesHeldOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	trainData := trainSplitImport(t, ldir, "spider-train", map[string]bool{"car_1": true, "student_transcripts_tracking": true, "tvshow": true,
		"orchestra": true, "employee_hire_evaluation": true, "singer": true, "battle_death": true})
	evalData := trainSplitImport(t, ldir, "spider-eval", map[string]bool{"dog_kennels": true, "network_1": true, "poker_player": true,
		"course_teach": true, "museum_visit": true, "voter_1": true})
	base, _ := policyInit(t, dir, "1")
	traj := policyRejectionSample(t, base, trainData, filepath.Join(dir, "traj.jsonl"), 1000)
	sft := trainRun(t, "sft", "--init", base, "--tasks", trainData, "--data", traj, "--out", filepath.Join(dir, "sft"), "--metrics-out", filepath.Join(dir, "sft.jsonl"))
	rl1 := trainRun(t, "grpo", "--init", sft.Out, "--tasks", trainData, "--out", filepath.Join(dir, "rl1"), "--metrics-out", filepath.Join(dir, "rl1.jsonl"),
		"--steps", "15", "--batch", "16", "--group-size", "8", "--lr", "0.02")
	rl2 := trainRun(t, "grpo", "--init", rl1.Out, "--tasks", trainData, "--out", filepath.Join(dir, "rl2"), "--metrics-out", filepath.Join(dir, "rl2.jsonl"),
		"--steps", "8", "--batch", "16", "--group-size", "4", "--lr", "0.01", "--kl-ref", rl1.Out, "--kl-coef", "0.001", "--unsolved-only")
	ts, err := train.LoadTasks(evalData, "")
	if err != nil {
		t.Fatal(err)
	}
	env := train.NewEnv(grade.MetricSpider)
	defer env.Close()
	acc := map[string]float64{}
	for name, ckpt := range map[string]string{"base": base, "sft": sft.Out, "rl1": rl1.Out, "rl2": rl2.Out} {
		w, err := refpolicy.Load(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		if acc[name], err = train.Accuracy(context.Background(), env, w, ts); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("held-out accuracy on %d tasks: %v; sft %+v", len(ts), acc, sft.SFT)
	if acc["base"] == 0 || acc["sft"] <= acc["base"] || acc["rl1"] <= acc["base"] || acc["rl2"] <= acc["base"] {
		t.Errorf("held-out accuracy %v: want Base > 0 and every trained checkpoint above Base", acc)
	}
	for _, m := range trainMetrics(t, filepath.Join(dir, "rl2.jsonl")) {
		if _, ok := m["actor/kl_loss"]; !ok {
			t.Fatalf("stage 2 with --kl-ref logs no actor/kl_loss: %v", m)
		}
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
