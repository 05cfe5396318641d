package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/manifests/manifeststest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// gateExperiment is a ledger built through the real commands: Spider dev
// imported for evaluation, two sets of 40 other dev questions imported as
// SFT and RL training data, three training stages (sft, rl, noupdate) run
// by rlgate run on a shell command that writes a checkpoint and a veRL
// metrics file, and four evaluations (base, sft, rl, noupdate) by rlgate
// eval against a scripted endpoint that answers from the gold: base and
// noupdate solve a quarter of the tasks, sft three quarters, rl all of
// them. Built once per test binary; each test forks the ledger and adds
// the runs of its fault with the same commands.
type gateExperiment struct {
	ledger    string
	runs      string // --runs
	train     string // --train
	dir       string // where this fork writes the files of its new runs
	fixture   string // where the built experiment's files lie, shared by every fork
	data      string
	base      string
	trainData map[string]string // by label
	written   map[string]string // the weights each training writes, by label
	identity  map[string]ledger.Digest
	endpoint  string
}

const gateTasks = 40

// The experiment takes seconds of real commands to build and about ten
// tests use it, so the test binary builds it once, in a directory of its
// own that outlives the test that happened to build it, and hands each
// caller a fork. sharedFixtures lists what the binary removes when its
// tests are done (TestMain).
var (
	gateOnce       sync.Once
	gateTemplate   *gateExperiment
	sharedMu       sync.Mutex // fixtures are built by tests running in parallel
	sharedFixtures []func()
)

// atBinaryEnd has f run once every test of the binary is done.
func atBinaryEnd(f func()) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	sharedFixtures = append(sharedFixtures, f)
}

// removeSharedFixtures undoes what the binary's shared fixtures left: it
// runs once, after every test.
func removeSharedFixtures() {
	for _, f := range slices.Backward(sharedFixtures) {
		f()
	}
}

// binaryLifetime is the test that builds a shared fixture, with the
// cleanups of the fixture's parts (the scripted endpoint) put off until
// the binary's tests are done.
type binaryLifetime struct{ *testing.T }

func (binaryLifetime) Cleanup(f func()) { atBinaryEnd(f) }

// TestGateStageNames is TestGate's case of a policy naming training runs
// by their stages, on its own: it changes the working directory, so it
// cannot run beside the tests that run in parallel.
func TestGateStageNames(t *testing.T) { gateStageNames(t, buildGateExperiment(t).fork(t)) }

// buildGateExperiment returns a fork of the experiment, built on the first
// call. The fork has a ledger and a directory for new files of its own;
// the files the built experiment's ledger names (x.fixture) are shared,
// so a test that changes one restores it (t.Cleanup).
func buildGateExperiment(t *testing.T) *gateExperiment {
	t.Helper()
	gateOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlgate-gate-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		atBinaryEnd(func() { os.RemoveAll(dir) })
		gateTemplate = gateBuild(t, dir)
	})
	if gateTemplate == nil {
		t.Fatal("the gate experiment failed to build in an earlier test; see its failure")
	}
	return gateTemplate.fork(t)
}

// gateBuild builds the experiment under dir.
func gateBuild(t *testing.T, dir string) *gateExperiment {
	t.Helper()
	ldir, data := spiderLedgerIn(t, dir)
	x := &gateExperiment{ledger: ldir, dir: dir, fixture: dir, data: data}

	// Training data: other dev questions, imported as their own datasets,
	// one for SFT and one for RL (which the No-update control shares).
	x.trainData = map[string]string{"sft": gateImportTrain(t, ldir, dir, "spider-sft", 540), "rl": gateImportTrain(t, ldir, dir, "spider-rl", 500)}
	x.trainData["noupdate"] = x.trainData["rl"]

	// Checkpoints: base, and what each training writes.
	x.base = manifeststest.Copy(t, sampleCkpt, filepath.Join(dir, "base"), 1, nil)
	x.written = map[string]string{
		"sft":      manifeststest.Copy(t, sampleCkpt, filepath.Join(dir, "sft-weights"), 1, manifeststest.Flip("d", 3, 0x10)),
		"rl":       manifeststest.Copy(t, sampleCkpt, filepath.Join(dir, "rl-weights"), 1, manifeststest.Flip("f", 2, 0x40)),
		"noupdate": x.base,
	}
	x.identity = map[string]ledger.Digest{"base": gateIdentity(t, x.base)}
	for _, label := range []string{"sft", "rl", "noupdate"} {
		lr := map[bool]string{true: "0", false: "1e-6"}[label == "noupdate"]
		x.trainRun(t, label, "train-"+label, x.written[label], lr, 0.25, "--param", "lr="+lr)
		x.identity[label] = gateIdentity(t, x.written[label])
	}

	// Evaluation: the scripted endpoint answers by model name.
	golds, err := gold.Read(filepath.Join(data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gold.Gold{}
	for _, g := range golds {
		byID[g.ID] = g
	}
	solves := map[string]func(i int) bool{
		"base":     func(i int) bool { return i%4 == 0 },
		"noupdate": func(i int) bool { return i%4 == 0 },
		"sft":      func(i int) bool { return i%4 != 3 },
		"rl":       func(i int) bool { return true },
	}
	x.endpoint = rollouttest.New(binaryLifetime{t}, func(r *rollouttest.Request) rollouttest.Reply {
		g := byID[r.TaskID]
		sql := "SELECT 'wrong'"
		if solves[r.Model](g.Index) {
			sql = g.SQL
		}
		return rollouttest.Reply{Content: "<think>t</think><solution>" + sql + "</solution>"}
	}).URL
	for _, label := range []string{"base", "sft", "rl", "noupdate"} {
		x.evalRun(t, label, "ev-"+label, data, x.identity[label])
	}
	return x
}

// fork returns the experiment with a copy of its ledger, for a test to add
// runs to, and a directory of the test's own for the files they write; the
// files the ledger already names stay shared.
func (x *gateExperiment) fork(t *testing.T) *gateExperiment {
	t.Helper()
	return x.forkIn(t, t.TempDir())
}

// forkIn is fork into dir, for a fork that outlives the test that takes
// it (a shared fixture built on the experiment).
func (x *gateExperiment) forkIn(t *testing.T, dir string) *gateExperiment {
	t.Helper()
	y := *x
	y.dir = filepath.Join(dir, "files")
	if err := os.MkdirAll(y.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	y.ledger = filepath.Join(dir, "ledger")
	if err := os.CopyFS(y.ledger, os.DirFS(x.ledger)); err != nil {
		t.Fatal(err)
	}
	return &y
}

// trainRun runs a training stage (gateTrain) as label's training run.
func (x *gateExperiment) trainRun(t *testing.T, label, run, weights, lr string, reward float64, extra ...string) {
	t.Helper()
	gateTrain(t, x.ledger, x.dir, run, label, x.base, x.trainData[label], weights, lr, reward, extra...)
	x.train = gateSetLabel(x.train, label, run)
}

// evalRun evaluates the tasks in data as label's model, recording
// identity, and makes the grading run label's evaluation.
func (x *gateExperiment) evalRun(t *testing.T, label, run, data string, identity ledger.Digest, extra ...string) {
	t.Helper()
	// --flush 1h: episodes go to the ledger 64 at a time however long
	// the rollout takes, so its entries are the same on a loaded machine.
	args := append([]string{"--ledger", x.ledger, "eval", "--tasks", data, "--endpoint", x.endpoint, "--model", label,
		"--model-identity", identity.String(), "--run", run, "--limit", fmt.Sprint(gateTasks), "--metric", "spider", "--flush", "1h"}, extra...)
	if code, _, errOut := rlgate(t, args...); code != 0 {
		t.Fatalf("eval %s: exit %d: %s", run, code, errOut)
	}
	x.runs = gateSetLabel(x.runs, label, run+".spider-greedy")
}

// gateSetLabel sets label's run in a LABEL=RUN,... list.
func gateSetLabel(list, label, run string) string {
	var out []string
	found := false
	for _, p := range strings.Split(list, ",") {
		if l, _, _ := strings.Cut(p, "="); l == label {
			p, found = label+"="+run, true
		}
		if p != "" {
			out = append(out, p)
		}
	}
	if !found {
		out = append(out, label+"="+run)
	}
	return strings.Join(out, ",")
}

// gateImportTrain imports 40 Spider dev questions from index from as the
// training dataset name.
func gateImportTrain(t *testing.T, ldir, dir, name string, from int) string {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/spider/dev.json")
	if err != nil {
		t.Fatal(err)
	}
	var dev []json.RawMessage
	if err := json.Unmarshal(raw, &dev); err != nil {
		t.Fatal(err)
	}
	goldRaw, err := os.ReadFile("../../testdata/spider/dev_gold.sql")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(goldRaw), "\n"), "\n")
	sub, err := json.Marshal(dev[from : from+40])
	if err != nil {
		t.Fatal(err)
	}
	devPath, goldPath := filepath.Join(dir, name+".json"), filepath.Join(dir, name+"_gold.sql")
	gateWrite(t, devPath, string(sub))
	gateWrite(t, goldPath, strings.Join(lines[from:from+40], "\n")+"\n")
	out := filepath.Join(dir, name)
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "import", "spider", "--name", name, "--dev", devPath, "--gold", goldPath,
		"--db-root", "../../testdata/spider/database", "--out", out); code != 0 {
		t.Fatalf("import training data: %s", errOut)
	}
	return out
}

// gateTrain runs one training stage through rlgate run: a shell command
// that writes the checkpoint weights as its output and a veRL JSONL
// metrics file of 20 steps with actor/lr = lr, critic/score/mean =
// reward and a slowly rising actor/kl_loss.
func gateTrain(t *testing.T, ldir, dir, run, stage, base, data, weights, lr string, reward float64, extra ...string) {
	t.Helper()
	var log strings.Builder
	for step := 1; step <= 20; step++ {
		fmt.Fprintf(&log, `{"step": %d, "data": {"training/global_step": %d, "actor/lr": %s, "critic/score/mean": %g, "actor/kl_loss": %g}}`+"\n",
			step, step, lr, reward, 0.01+0.0005*float64(step))
	}
	src := filepath.Join(dir, run+".jsonl")
	gateWrite(t, src, log.String())
	out, metrics := filepath.Join(dir, run+"-out"), filepath.Join(dir, run+"-metrics.jsonl")
	// --flush 1h: the run's entries are the same however long the stage
	// takes on a loaded machine (TestReport's goldens hold their seqs).
	args := append([]string{"--ledger", ldir, "run", "--stage", stage, "--run", run, "--gpu", "off", "--flush", "1h",
		"--in", "base=" + base, "--in", "data=" + data, "--out", "ckpt=" + out, "--metrics", metrics + ":verl"}, extra...)
	args = append(args, "--", "sh", "-c", fmt.Sprintf("mkdir -p %s && cp -r %s/. %s && cp %s %s", out, weights, out, src, metrics))
	if code, _, errOut := rlgate(t, args...); code != 0 {
		t.Fatalf("run %s: exit %d: %s", run, code, errOut)
	}
}

// gateLeakGold copies an imported dataset to dst with task 7's question
// ending in its gold SQL, as a faulty import that kept the answer would
// write it, and returns dst.
func gateLeakGold(t *testing.T, data, dst string) string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(data)); err != nil {
		t.Fatal(err)
	}
	golds, err := gold.Read(filepath.Join(data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(data, dataset.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var task map[string]any
	if err := json.Unmarshal([]byte(lines[7]), &task); err != nil {
		t.Fatal(err)
	}
	task["question"] = fmt.Sprint(task["question"]) + " Hint: " + golds[7].SQL
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	lines[7] = string(b)
	tasksPath := filepath.Join(dst, dataset.TasksFile)
	gateWrite(t, tasksPath, strings.Join(lines, "\n")+"\n")
	d, _, err := manifests.HashFile(context.Background(), tasksPath)
	if err != nil {
		t.Fatal(err)
	}
	man, err := dataset.ReadManifest(dst)
	if err != nil {
		t.Fatal(err)
	}
	man.Tasks.Digest = d
	mb, err := json.Marshal(man)
	if err != nil {
		t.Fatal(err)
	}
	gateWrite(t, filepath.Join(dst, dataset.ManifestFile), string(mb))
	return dst
}

func gateIdentity(t *testing.T, path string) ledger.Digest {
	t.Helper()
	m, err := manifests.BuildCheckpointManifest(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return m.Identity
}

func gateWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gate runs rlgate gate on the experiment and returns its exit code and
// verdict.
func (x *gateExperiment) gate(t *testing.T, extra ...string) (int, audit.Verdict) {
	t.Helper()
	args := append([]string{"--ledger", x.ledger, "gate", "--runs", x.runs, "--train", x.train, "--self-grade-sample", "40", "--json"}, extra...)
	code, out, errOut := rlgate(t, args...)
	var v audit.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("gate: exit %d: %v\n%s%s", code, err, out, errOut)
	}
	return code, v
}

// failedChecks lists the names of the verdict's failed checks.
func failedChecks(v audit.Verdict) []string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK && !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// checkSeqs returns the evidence seqs of every check named name.
func checkSeqs(v audit.Verdict, name string) []int64 {
	var out []int64
	for _, c := range v.Checks {
		if c.Name == name {
			out = append(out, c.Seqs...)
		}
	}
	return out
}

// gateLog lists the entries of one kind of one run through rlgate log.
func gateLog(t *testing.T, ldir, run, kind string) []ledger.Entry {
	t.Helper()
	code, out, errOut := rlgate(t, "--ledger", ldir, "log", "--run", run, "--kind", kind, "--json")
	var es []ledger.Entry
	if err := json.Unmarshal([]byte(out), &es); code != 0 || err != nil {
		t.Fatalf("log --run %s --kind %s: exit %d: %v %s", run, kind, code, err, errOut)
	}
	return es
}

// TestGate builds one experiment through the real commands, then checks
// on forks of its ledger that the gate passes it, fails each fault for its
// reason, and that the audit commands and repro's gate: work on it.
func TestGate(t *testing.T) {
	t.Parallel()
	x := buildGateExperiment(t)
	t.Run("clean experiment passes", func(t *testing.T) { gateCleanPasses(t, x.fork(t)) })
	t.Run("dry run records nothing", func(t *testing.T) { gateDryRun(t, x.fork(t)) })
	t.Run("each fault fails for its reason", func(t *testing.T) { gateFaults(t, x) })
	t.Run("audit commands", func(t *testing.T) { gateAuditCommands(t, x.fork(t)) })
	t.Run("identity sources", func(t *testing.T) { gateIdentitySources(t, x.fork(t)) })
	t.Run("repro stops downstream of a failed gate", func(t *testing.T) { gateRepro(t, x.fork(t)) })
	t.Run("policy and --runs as handed in", func(t *testing.T) { gatePolicyFlags(t, x.fork(t)) })
	t.Run("claims on a difficulty group", func(t *testing.T) { gateGroupClaims(t, x.fork(t)) })
	t.Run("repro --dry-run writes nothing", func(t *testing.T) { gateReproDryRun(t, x.fork(t)) })
}

func gateCleanPasses(t *testing.T, x *gateExperiment) {
	junit := filepath.Join(t.TempDir(), "gate.xml")
	code, v := x.gate(t, "--junit", junit)
	if code != exitOK || !v.OK {
		t.Fatalf("clean experiment: exit %d, failed %v", code, failedChecks(v))
	}
	var claims []string
	for _, c := range v.Claims {
		claims = append(claims, c.Claim)
		if _, ok := c.MDE.Get(); !ok || c.Seq == 0 {
			t.Errorf("claim %s: no minimum detectable effect or comparison entry: %+v", c.Claim, c)
		}
	}
	if diff := cmp.Diff([]string{"rl > base", "rl > noupdate", "sft > base"}, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	var audits []string
	for _, a := range v.Audits {
		audits = append(audits, a.Audit)
	}
	if diff := cmp.Diff(audit.Audits, audits); diff != "" {
		t.Errorf("audits run (-want +got):\n%s", diff)
	}

	// The verdict is bound to the rl model and the head before it.
	rlStart := gateLog(t, x.ledger, "ev-rl", records.KindRunStart)[0]
	var start struct {
		ModelIdentity ledger.Digest `json:"model_identity"`
	}
	if err := json.Unmarshal(rlStart.Body, &start); err != nil {
		t.Fatal(err)
	}
	if v.ModelIdentity == nil || *v.ModelIdentity != start.ModelIdentity || v.Head.Seq != v.Seq-1 {
		t.Errorf("verdict bound to %v at head %d, want %s at %d", v.ModelIdentity, v.Head.Seq, start.ModelIdentity, v.Seq-1)
	}
	code, out, _ := rlgate(t, "--ledger", x.ledger, "show", fmt.Sprint(v.Seq))
	if code != 0 || !strings.Contains(out, records.KindVerdict) {
		t.Errorf("show verdict: exit %d: %s", code, out)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "<testcase "); n != len(v.Checks) || strings.Contains(string(raw), "<failure") {
		t.Errorf("junit: %d test cases for %d checks:\n%s", n, len(v.Checks), raw)
	}
	// CI reporters key a case by class and name: no two may share both.
	var suites struct {
		Cases []struct {
			Class string `xml:"classname,attr"`
			Name  string `xml:"name,attr"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(raw, &suites); err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{}
	for _, c := range suites.Cases {
		if key := c.Class + " / " + c.Name; cases[key] {
			t.Errorf("junit: test case %s repeats", key)
		}
		cases[c.Class+" / "+c.Name] = true
	}

	// The CI examples, run as a lab's repository holds them, pass.
	t.Run("ci examples", func(t *testing.T) { gateCIExamples(t, x) })

	// The text form is one table with the verdict under it.
	code, out, _ = rlgate(t, "--ledger", x.ledger, "gate", "--runs", x.runs, "--train", x.train, "--self-grade-sample", "40")
	if code != exitOK || !strings.Contains(out, "claim rl > base") || !strings.Contains(out, "gate PASSED (policy paper-grade: claims rl > base, rl > noupdate, sft > base; audits gold, split, budget, reward, training, identity; α 0.05; differs from paper-grade: options: self_grade_sample 40 (default 200))") {
		t.Errorf("text: exit %d:\n%s", code, out)
	}
}

// gateFaults adds to a fork of the clean experiment, through the real
// commands, the runs of one fault each, and gates with them in place of
// the clean ones.
func gateFaults(t *testing.T, clean *gateExperiment) {
	tests := []gateFault{
		{
			name: "the rl rollout leaked gold into a prompt",
			fault: func(t *testing.T, x *gateExperiment) []string {
				// Every evaluation reads the leaky tasks: the budget audit
				// would fail one that read other tasks than the rest.
				leaky := gateLeakGold(t, x.data, filepath.Join(t.TempDir(), "leaky"))
				for _, label := range []string{"base", "sft", "rl", "noupdate"} {
					x.evalRun(t, label, "ev-"+label+"-leaky", leaky, x.identity[label])
				}
				return nil
			},
			failed: []string{"audit gold: no-gold-in-prompts"},
			check:  "audit gold: no-gold-in-prompts",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "ev-rl-leaky", "trajectories")[0].Seq
			},
		},
		{
			name: "the no-update weights differ from base",
			fault: func(t *testing.T, x *gateExperiment) []string {
				w := manifeststest.Copy(t, sampleCkpt, filepath.Join(t.TempDir(), "noupdate-weights"), 1, manifeststest.Flip("d", 9, 0x01))
				x.trainRun(t, "noupdate", "train-noupdate-changed", w, "0", 0.25, "--param", "lr=0")
				x.evalRun(t, "noupdate", "ev-noupdate-changed", x.data, gateIdentity(t, w))
				return nil
			},
			failed: []string{"audit identity: noupdate-identical"},
			check:  "audit identity: noupdate-identical",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateArtifact(t, x.ledger, "train-noupdate-changed", "output")
			},
		},
		{
			name: "two evaluations used different budgets",
			fault: func(t *testing.T, x *gateExperiment) []string {
				x.evalRun(t, "rl", "ev-rl-t07", x.data, x.identity["rl"], "--temperature", "0.7")
				return nil
			},
			failed: []string{"audit budget: same-protocol"},
			check:  "audit budget: same-protocol",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "ev-rl-t07", records.KindRunStart)[0].Seq
			},
		},
		{
			name: "the database path was wrong",
			fault: func(t *testing.T, x *gateExperiment) []string {
				// rlgate run refuses the wrong root up front; a user who
				// skipped its pre-flight trains anyway, and the gate must
				// still catch it.
				wrong := filepath.Join(t.TempDir(), "no-such-databases")
				marker := filepath.Join(t.TempDir(), "ran")
				if code, errOut := preflightRun(t, x.ledger, "train-rl-wrongdb-refused", x.trainData["rl"], marker, "--param", "db_root="+wrong); code != 1 ||
					!strings.Contains(errOut, "missing under "+wrong) {
					t.Fatalf("run with the wrong root: exit %d, want 1: %s", code, errOut)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Fatal("the stage ran despite the wrong root")
				}
				x.trainRun(t, "rl", "train-rl-wrongdb", x.written["rl"], "1e-6", 0, "--param", "lr=1e-6",
					"--param", "db_root="+wrong, "--skip-preflight")
				return nil
			},
			failed: []string{"audit reward: databases-present", "audit reward: gold-self-grade", "audit reward: execution-reward"},
			check:  "audit reward: gold-self-grade",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "train-rl-wrongdb", records.KindRunStart)[0].Seq
			},
		},
		{
			name: "the trained run logged lr = 0",
			fault: func(t *testing.T, x *gateExperiment) []string {
				x.trainRun(t, "rl", "train-rl-lr0", x.written["rl"], "0", 0.25, "--param", "lr=1e-6")
				return nil
			},
			failed: []string{"audit training: learning-rate"},
			check:  "audit training: learning-rate",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "train-rl-lr0", records.KindMetrics)[0].Seq
			},
		},
	}
	runGateFaults(t, clean, tests)
}

// gateFault is a fault built on a fork of the clean experiment that the
// gate must reject: exactly the failed checks, check citing the entry seq
// returns, and saying every string fault returns.
type gateFault struct {
	name   string
	fault  func(t *testing.T, x *gateExperiment) (says []string)
	failed []string
	check  string
	seq    func(t *testing.T, x *gateExperiment) int64
}

// runGateFaults runs each fault on its own fork of clean.
func runGateFaults(t *testing.T, clean *gateExperiment, faults []gateFault) {
	for _, tc := range faults {
		t.Run(tc.name, func(t *testing.T) {
			x := clean.fork(t)
			says := tc.fault(t, x)
			code, v := x.gate(t)
			if code != exitCheckFailed || v.OK {
				t.Fatalf("exit %d, ok %v, want %d", code, v.OK, exitCheckFailed)
			}
			if diff := cmp.Diff(tc.failed, failedChecks(v)); diff != "" {
				t.Errorf("failed checks (-want +got):\n%s", diff)
			}
			if seq := tc.seq(t, x); !slices.Contains(checkSeqs(v, tc.check), seq) {
				t.Errorf("%s cites entries %v, want %d among them", tc.check, checkSeqs(v, tc.check), seq)
			}
			var msgs []string
			for _, c := range v.Checks {
				if c.Name == tc.check && !c.OK {
					msgs = append(msgs, c.Message)
				}
			}
			all := strings.Join(msgs, "\n")
			for _, w := range says {
				if !strings.Contains(all, w) {
					t.Errorf("%s does not say %q:\n%s", tc.check, w, all)
				}
			}
		})
	}
}

// gateArtifact returns the seq of a run's checkpoint artifact of role.
func gateArtifact(t *testing.T, ldir, run, role string) int64 {
	t.Helper()
	for _, e := range gateLog(t, ldir, run, records.KindArtifact) {
		var a ledger.Artifact
		if err := json.Unmarshal(e.Body, &a); err != nil {
			t.Fatal(err)
		}
		if string(a.Role) == role && a.Kind == "checkpoint" {
			return e.Seq
		}
	}
	t.Fatalf("run %s has no %s checkpoint", run, role)
	return 0
}

// gateRepro runs a pipeline whose report stage declares a gate and whose
// publish stage reads the report: publish runs when the gate passes and is
// blocked when it fails.
// policySubjects is the experiment's runs and train as a policy file's
// runs: and train: mappings.
func (x *gateExperiment) policySubjects() string {
	var runs strings.Builder
	for _, pairs := range []struct{ key, list string }{{"runs", x.runs}, {"train", x.train}} {
		fmt.Fprintf(&runs, "%s:\n", pairs.key)
		for _, p := range strings.Split(pairs.list, ",") {
			label, run, _ := strings.Cut(p, "=")
			fmt.Fprintf(&runs, "  %s: %s\n", label, run)
		}
	}
	return runs.String()
}

func gateRepro(t *testing.T, x *gateExperiment) {
	dir := t.TempDir()
	gateWrite(t, filepath.Join(dir, "holds.yaml"), "claims: [\"rl > base\"]\naudits: [training]\n"+x.policySubjects())
	gateWrite(t, filepath.Join(dir, "fails.yaml"), "claims: [\"base > rl\"]\naudits: [training]\n"+x.policySubjects())
	pipelineFile := func(policy string) string {
		p := filepath.Join(dir, "rlgate.yaml")
		gateWrite(t, p, `stages:
  report:
    cmd: "mkdir -p out && echo `+policy+` > out/report.txt"
    outs: {report: out/report.txt}
    gate: `+policy+`
    gpu: off
  publish:
    cmd: "cp out/report.txt out/published.txt"
    deps: {report: out/report.txt}
    outs: {published: out/published.txt}
    gpu: off
`)
		return p
	}
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "repro", "-f", pipelineFile("fails.yaml"), "--json")
	var ds []struct{ Stage, Action string }
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		t.Fatalf("repro: exit %d: %v %s", code, err, errOut)
	}
	if code != exitError || len(ds) != 2 || ds[0].Action != "failed" || ds[1].Action != "blocked" || !strings.Contains(errOut, "claim base > rl") {
		t.Errorf("failed gate: exit %d, decisions %+v: %s", code, ds, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "published.txt")); err == nil {
		t.Error("publish ran downstream of a failed gate")
	}
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "repro", "-f", pipelineFile("holds.yaml")); code != exitOK || !strings.Contains(out, "gate holds.yaml: passed") {
		t.Errorf("passing gate: exit %d:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "published.txt")); err != nil {
		t.Errorf("publish did not run after the gate passed: %v", err)
	}
}
