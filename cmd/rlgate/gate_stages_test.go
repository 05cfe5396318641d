package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
)

// gateStagePolicy writes a policy naming the experiment's evaluations by
// run id and its training runs by train (label: run or stage), and
// returns its path.
func gateStagePolicy(t *testing.T, x *gateExperiment, extra, train string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(extra + "runs:\n")
	for _, p := range strings.Split(x.runs, ",") {
		label, run, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "  %s: %s\n", label, run)
	}
	b.WriteString("train:\n" + train)
	p := filepath.Join(t.TempDir(), "gate.yaml")
	gateWrite(t, p, b.String())
	return p
}

// gateJSON runs rlgate gate --json with args and returns its exit code
// and verdict.
func gateJSON(t *testing.T, x *gateExperiment, args ...string) (int, audit.Verdict) {
	t.Helper()
	code, out, errOut := rlgate(t, append([]string{"--ledger", x.ledger, "gate", "--self-grade-sample", "40", "--json"}, args...)...)
	var v audit.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("gate %v: exit %d: %v\n%s%s", args, code, err, out, errOut)
	}
	return code, v
}

// gateStageNames: a policy outside repro names the training runs by their
// stages (sft, rl, noupdate, whose runs are train-sft, ...): the gate
// passes on each stage's latest ok run, says which, and records it; the
// audit and report commands take stage names too (and report --check
// re-derives the report). A later run of a stage is what a
// new gate takes, while the earlier verdict still re-derives to the run
// it recorded. A run id wins over a stage of that name; a name that is
// neither, and a stage run in two directories, are one-line errors naming
// it.
func gateStageNames(t *testing.T, x *gateExperiment) {
	// The audits that read the training runs; the rest do not see them.
	policy := gateStagePolicy(t, x, "name: by-stage\nclaims: [\"rl > base\", \"rl > noupdate\"]\naudits: [training, identity]\n", "  sft: sft\n  rl: rl\n  noupdate: noupdate\n")
	code, v := gateJSON(t, x, "--policy", policy)
	if code != exitOK || !v.OK {
		t.Fatalf("gate naming stages: exit %d, failed %v", code, failedChecks(v))
	}
	want := []audit.Resolution{{Label: "sft", Train: true, Stage: "sft", Run: "train-sft"},
		{Label: "rl", Train: true, Stage: "rl", Run: "train-rl"}, {Label: "noupdate", Train: true, Stage: "noupdate", Run: "train-noupdate"}}
	if d := cmp.Diff(want, v.Resolved); d != "" {
		t.Errorf("the verdict's resolved stages (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]audit.LabeledRun{{Label: "sft", Run: "train-sft"}, {Label: "rl", Run: "train-rl"}, {Label: "noupdate", Run: "train-noupdate"}}, v.Policy.Subjects.Train); d != "" {
		t.Errorf("the verdict's training runs (-want +got):\n%s", d)
	}
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "gate", "--policy", policy, "--self-grade-sample", "40", "--dry-run"); code != exitOK ||
		!strings.Contains(out, "rlgate: train rl: stage rl is run train-rl (its latest that ended ok)") {
		t.Errorf("gate's table does not say which run stage rl is: exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "audit", "training", "--runs", x.runs, "--train", "sft=sft,rl=rl,noupdate=noupdate"); code != exitOK ||
		!strings.Contains(errOut, "rlgate: train noupdate: stage noupdate is run train-noupdate") {
		t.Errorf("audit training --train naming stages: exit %d: %s", code, errOut)
	}

	report := filepath.Join(t.TempDir(), "report")
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "report", "--out", report, "--format", "json", "--policy", policy); code != exitOK ||
		!strings.Contains(errOut, "rlgate: train rl: stage rl is run train-rl") {
		t.Errorf("report --policy naming stages: exit %d: %s", code, errOut)
	}
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "report", "--check", report); code != exitOK {
		t.Errorf("report --check of the report on stage names: exit %d:\n%s%s", code, out, errOut)
	}

	x.trainRun(t, "rl", "train-rl-later", x.written["rl"], "1e-6", 0.25, "--param", "lr=1e-6")
	if _, later := gateJSON(t, x, "--policy", policy, "--dry-run"); labeledRun(later.Policy.Subjects.Train, "rl") != "train-rl-later" {
		t.Errorf("after a later run of stage rl, the gate took %q", labeledRun(later.Policy.Subjects.Train, "rl"))
	}
	l, err := ledger.OpenReadOnly(context.Background(), x.ledger)
	if err != nil {
		t.Fatal(err)
	}
	again, err := audit.Rederive(context.Background(), l, v.Seq)
	l.Close()
	if err != nil || again.Run != "train-rl" || labeledRun(again.Policy.Subjects.Train, "rl") != "train-rl" {
		t.Errorf("the verdict before the later run re-derives to %+v: %v; want train-rl", again, err)
	}

	gateForgedResolution(t, x.ledger, v.Seq)

	// A run whose id is a stage's name is that run.
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "run", "--stage", "notes", "--run", "noupdate", "--gpu", "off", "--", "true"); code != exitOK {
		t.Fatalf("run noupdate: exit %d: %s", code, errOut)
	}
	if _, exact := gateJSON(t, x, "--policy", policy, "--dry-run"); labeledRun(exact.Policy.Subjects.Train, "noupdate") != "noupdate" || len(exact.Resolved) != 2 {
		t.Errorf("train noupdate: gate took %q, resolved %+v; want the run noupdate, not the stage", labeledRun(exact.Policy.Subjects.Train, "noupdate"), exact.Resolved)
	}

	oneLine := func(what string, args []string, want string) {
		t.Helper()
		code, out, errOut := rlgate(t, append([]string{"--ledger", x.ledger}, args...)...)
		if code != exitError || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", what, code, out, errOut, want)
		}
	}
	unknown := gateStagePolicy(t, x, "", "  rl: rl9\n")
	oneLine("a name that is neither", []string{"gate", "--policy", unknown}, `train rl: "rl9" is neither a run nor a stage of this ledger`)

	t.Chdir(t.TempDir()) // a second clone of the pipeline runs stage sft
	gateTrain(t, x.ledger, x.dir, "train-sft-elsewhere", "sft", x.base, x.trainData["sft"], x.written["sft"], "1e-6", 0.25)
	oneLine("a stage run in two directories", []string{"gate", "--policy", policy, "--dry-run"}, `train sft: stage "sft" is ambiguous: its runs that ended ok were started in 2 directories`)
}

// gateForgedResolution: a copy of verdict seq appended after a later run
// of its stage rl, with correct hashes and without the gate's own records
// (as a careful forger would), still says stage rl is train-rl; its
// decision reproduces, and re-derivation refuses it all the same, since
// at its head the stage's latest ok run is another.
func gateForgedResolution(t *testing.T, dir string, seq int64) {
	t.Helper()
	v := appendForgedVerdict(t, dir, seq, func(*audit.Verdict) {})
	ctx := context.Background()
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := audit.Rederive(ctx, l, v.Seq); err == nil || !strings.Contains(err.Error(), "the stages it names resolve to other runs") {
		t.Errorf("a verdict saying stage rl is train-rl after a later run of rl: %v; want it refused", err)
	}
}

// labeledRun is the run labelled label in lrs, or "".
func labeledRun(lrs []audit.LabeledRun, label string) string {
	for _, lr := range lrs {
		if lr.Label == label {
			return lr.Run
		}
	}
	return ""
}

// gateReproDryRun: rlgate repro --dry-run of a pipeline whose gated stage
// is up to date decides the gate and writes nothing: every file of the
// ledger directory (ledger.db, blobs) has the same bytes afterwards.
func gateReproDryRun(t *testing.T, x *gateExperiment) {
	policy := gateStagePolicy(t, x, "claims: [\"rl > base\"]\naudits: [training]\n", "  sft: sft\n  rl: rl\n  noupdate: noupdate\n")
	pf := filepath.Join(filepath.Dir(policy), "rlgate.yaml")
	gateWrite(t, pf, `stages:
  report:
    cmd: "echo done > out/report.txt"
    outs: {report: out/report.txt}
    gate: gate.yaml
    gpu: off
`)
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "repro", "-f", pf); code != exitOK || !strings.Contains(out, "gate gate.yaml: passed") {
		t.Fatalf("repro: exit %d:\n%s%s", code, out, errOut)
	}
	before := ledgerBytes(t, x.ledger)
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "repro", "-f", pf, "--dry-run")
	if code != exitOK || !strings.Contains(out, "gate gate.yaml: passed all") || !strings.Contains(out, "dry run, nothing recorded") {
		t.Errorf("repro --dry-run: exit %d:\n%s%s", code, out, errOut)
	}
	if d := cmp.Diff(before, ledgerBytes(t, x.ledger)); d != "" {
		t.Errorf("repro --dry-run changed the ledger directory (-before +after):\n%s", d)
	}
}

// ledgerBytes maps every file under the ledger directory dir (ledger.db,
// blobs) to its bytes' digest. SQLite's shared-memory index (-shm) and an
// empty write-ahead log (-wal), which a read-only open of a writable
// directory leaves behind, hold no entry and are left out; a -wal with
// anything in it is not.
func ledgerBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "-shm") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 && strings.HasSuffix(p, "-wal") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = ledger.Sum(b).String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// demoOutsideRepro: on a copy of a finished demo, rlgate gate --policy
// gate.yaml (whose train: names the stages sft, rl2 and noupdate) passes
// outside repro, saying which run each stage is; then rlgate repro
// --dry-run finds every stage up to date, gates without recording, and
// leaves every file of the ledger directory byte-identical.
func demoOutsideRepro(t *testing.T, done, exe string) {
	fork := filepath.Join(t.TempDir(), "fork")
	if out, err := exec.Command("cp", "-a", done, fork).CombinedOutput(); err != nil {
		t.Fatalf("copy demo: %v: %s", err, out)
	}
	ldir := filepath.Join(fork, ledger.DefaultDir)
	code, out, errOut := rlgate(t, "--ledger", ldir, "gate", "--policy", filepath.Join(fork, demo.PolicyFile))
	if code != exitOK || !strings.Contains(out, "gate PASSED") || !strings.Contains(out, "rlgate: train rl: stage rl2 is run rl2-") {
		t.Errorf("gate --policy gate.yaml outside repro: exit %d:\n%s%s", code, out, errOut)
	}
	// repro runs as a child process with exe first on its PATH, leaving
	// this process's environment alone for the tests running beside it.
	before := ledgerBytes(t, ldir)
	repro := rlgateProcess(t, "--ledger", ldir, "repro", "-f", filepath.Join(fork, demo.PipelineFile), "--dry-run")
	repro.Env = append(repro.Env, "PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	repro.Stdout, repro.Stderr = &stdout, &stderr
	if err := repro.Run(); err != nil && repro.ProcessState == nil {
		t.Fatal(err)
	}
	code, out, errOut = repro.ProcessState.ExitCode(), stdout.String(), stderr.String()
	if code != exitOK || strings.Contains(out, "would-run") || !strings.Contains(out, "dry run, nothing recorded") {
		t.Errorf("repro --dry-run: exit %d:\n%s%s", code, out, errOut)
	}
	if d := cmp.Diff(before, ledgerBytes(t, ldir)); d != "" {
		t.Errorf("repro --dry-run changed the ledger directory (-before +after):\n%s", d)
	}
}
