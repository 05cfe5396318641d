package main

import (
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/pipeline"
)

// unsetEnv unsets name for the test (restored after it).
func unsetEnv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "")
	os.Unsetenv(name)
}

// TestReproStagesGetTheLedger: rlgate --ledger DIR repro, DIR relative to
// where rlgate runs, hands the ledger to the rlgate commands its stages
// run in the pipeline's directory (RLGATE_LEDGER, made absolute), and the
// stage's run.start records it.
func TestReproStagesGetTheLedger(t *testing.T) {
	unsetEnv(t, ledger.EnvLedger)
	unsetEnv(t, ledger.EnvBlobs)
	exe := demoExe(t)
	t.Setenv("PATH", filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	work := t.TempDir()
	t.Chdir(work)
	if code, _, errOut := rlgate(t, "--ledger", "team-ledger", "init"); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	pdir := filepath.Join(work, "pipeline")
	os.Mkdir(pdir, 0o755)
	gateWrite(t, filepath.Join(pdir, "rlgate.yaml"), `stages:
  head:
    cmd: "rlgate head > out/head.txt"
    outs: {head: out/head.txt}
    gpu: off
`)
	if code, out, errOut := rlgate(t, "--ledger", "team-ledger", "repro", "-f", "pipeline/rlgate.yaml"); code != exitOK {
		t.Fatalf("repro: exit %d:\n%s%s", code, out, errOut)
	}
	abs := filepath.Join(work, "team-ledger")
	got, err := os.ReadFile(filepath.Join(pdir, "out", "head.txt"))
	if err != nil || !strings.Contains(string(got), headOf(t, abs).LedgerID) {
		t.Errorf("the stage's rlgate head printed %q (%v), want the head of %s", got, err, abs)
	}
	code, out, errOut := rlgate(t, "--ledger", abs, "log", "--kind", records.KindRunStart, "--json")
	var es []ledger.Entry
	if err := json.Unmarshal([]byte(out), &es); code != exitOK || err != nil || len(es) == 0 {
		t.Fatalf("log: exit %d: %v %s", code, err, errOut)
	}
	var start struct {
		Stage string            `json:"stage"`
		Env   map[string]string `json:"env"`
	}
	if err := json.Unmarshal(es[len(es)-1].Body, &start); err != nil || start.Stage != "head" || start.Env[ledger.EnvLedger] != abs {
		t.Errorf("the stage's run.start: stage %q, %s=%q (%v); want %s", start.Stage, ledger.EnvLedger, start.Env[ledger.EnvLedger], err, abs)
	}
}

// TestReproDryRunExamples: on a new ledger, with the benchmark unpacked
// and the trainers' commands on PATH, examples/verl and examples/skyrl
// pass rlgate repro --dry-run, every stage planned to run and the ledger
// directory's bytes unchanged. Then a dry run of examples/verl fails,
// exit 1 in one line naming what is wrong, when its gate policy names a
// stage the pipeline lacks. What else a dry run names is
// workflow/repro's TestDryRunNamesWhatWouldFail.
func TestReproDryRunExamples(t *testing.T) {
	unsetEnv(t, ledger.EnvLedger)
	unsetEnv(t, ledger.EnvBlobs)
	bin := t.TempDir()
	for _, tool := range []string{"rlgate", "huggingface-cli", "llamafactory-cli"} {
		gateWrite(t, filepath.Join(bin, tool), "#!/bin/sh\nexit 0\n")
		os.Chmod(filepath.Join(bin, tool), 0o755)
	}
	path := bin + string(os.PathListSeparator) + "/usr/bin" + string(os.PathListSeparator) + "/bin"
	t.Setenv("PATH", path)
	dirs := map[string]string{}
	for _, ex := range []string{"verl", "skyrl"} {
		root := t.TempDir()
		dir := filepath.Join(root, ex)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("../../examples", ex))); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile("../../examples/with-vllm.sh")
		if err != nil {
			t.Fatal(err)
		}
		gateWrite(t, filepath.Join(root, "with-vllm.sh"), string(raw))
		if _, err := demo.Unpack(filepath.Join(dir, demo.SpiderDir), demo.UnpackOptions{}); err != nil {
			t.Fatal(err)
		}
		dirs[ex] = dir
		t.Run(ex, func(t *testing.T) {
			ldir := filepath.Join(t.TempDir(), "ledger")
			if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != exitOK {
				t.Fatal(errOut)
			}
			before := ledgerBytes(t, ldir)
			code, out, errOut := rlgate(t, "--ledger", ldir, "repro", "-f", filepath.Join(dir, demo.PipelineFile), "--dry-run", "--json")
			var ds []pipeline.Decision
			if err := json.Unmarshal([]byte(out), &ds); err != nil || code != exitOK {
				t.Fatalf("dry run: exit %d: %v\n%s%s", code, err, out, errOut)
			}
			for _, d := range ds {
				if d.Action != pipeline.ActionWouldRun || len(d.Problems) > 0 {
					t.Errorf("stage %s: %s %v, problems %v", d.Stage, d.Action, d.Reasons, d.Problems)
				}
			}
			if d := cmp.Diff(before, ledgerBytes(t, ldir)); d != "" {
				t.Errorf("the dry run changed the ledger directory (-before +after):\n%s", d)
			}
		})
	}

	ldir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	dir := dirs["verl"]
	pf, gate := filepath.Join(dir, demo.PipelineFile), filepath.Join(dir, demo.PolicyFile)
	policy, err := os.ReadFile(gate)
	if err != nil {
		t.Fatal(err)
	}
	gateWrite(t, gate, strings.Replace(string(policy), "rl: rl2\n", "rl: rl3\n", 1))
	want := `stage compare: gate gate.yaml: train rl: "rl3" is neither a stage of ` + pf + ` nor a run of the ledger`
	code, out, errOut := rlgate(t, "--ledger", ldir, "repro", "-f", pf, "--dry-run")
	if code != exitError || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) {
		t.Errorf("a policy naming a missing stage: exit %d, stderr %q; want exit 1 and one line with %q\n%s", code, errOut, want, out)
	}
}
