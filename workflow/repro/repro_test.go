package repro

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/pipeline"
)

// TestDryRunNamesWhatWouldFail: a dry run of examples/verl, on a new
// ledger with the benchmark unpacked and the trainers' commands on PATH,
// plans every stage to run and stops nothing; then it stops, naming the
// stage and what is wrong in one error, when the gate policy names a
// stage the pipeline lacks, when the policy file is missing, when a
// trainer is not on PATH, and when an input no stage writes is missing.
// (rlgate repro --dry-run's exit code and one-line error are
// cmd/rlgate's TestReproDryRunExamples.)
func TestDryRunNamesWhatWouldFail(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"rlgate", "huggingface-cli", "llamafactory-cli"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
	root := t.TempDir()
	dir := filepath.Join(root, "verl")
	if err := os.CopyFS(dir, os.DirFS("../../examples/verl")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../examples/with-vllm.sh")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "with-vllm.sh"), string(raw))
	if _, err := demo.Unpack(filepath.Join(dir, demo.SpiderDir), demo.UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	ldir := filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.Init(t.Context(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	pf, gate := filepath.Join(dir, demo.PipelineFile), filepath.Join(dir, demo.PolicyFile)
	dryRun := func() ([]pipeline.Decision, error) {
		t.Helper()
		ds, err := Run(t.Context(), ldir, Options{File: pf, DryRun: true})
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		return ds, Stopped(ds, true)
	}
	ds, err := dryRun()
	if err != nil {
		t.Fatalf("the example would stop: %v", err)
	}
	for _, d := range ds {
		if d.Action != pipeline.ActionWouldRun || len(d.Problems) > 0 {
			t.Errorf("stage %s: %s %v, problems %v", d.Stage, d.Action, d.Reasons, d.Problems)
		}
	}

	stops := func(what, want string) {
		t.Helper()
		_, err := dryRun()
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "Nothing was run or recorded") {
			t.Errorf("%s: %v; want one line with %q", what, err, want)
		}
	}
	policy, err := os.ReadFile(gate)
	if err != nil {
		t.Fatal(err)
	}
	write(t, gate, strings.Replace(string(policy), "rl: rl2\n", "rl: rl3\n", 1))
	stops("a policy naming a missing stage", `stage compare: gate gate.yaml: train rl: "rl3" is neither a stage of `+pf+` nor a run of the ledger`)
	os.Remove(gate)
	stops("a missing policy file", "stage compare: gate gate.yaml: ")
	write(t, gate, string(policy))
	os.Remove(filepath.Join(bin, "llamafactory-cli"))
	stops("a trainer not on PATH", "stage sft: its command llamafactory-cli is not on PATH")
	os.Remove(filepath.Join(dir, "spider", "eval", "dev.json"))
	stops("an input nothing writes", "stage import_eval: input dev (")
}

// TestStopped: a stage that failed stops the pipeline, and so does one
// blocked except on a dry run, whose problems are summed up instead.
func TestStopped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ds     []pipeline.Decision
		dryRun bool
		want   string // empty: nil
	}{
		{"all up to date", []pipeline.Decision{{Stage: "a", Action: pipeline.ActionSkip}}, false, ""},
		{"a failed stage", []pipeline.Decision{{Stage: "a", Action: pipeline.ActionSkip}, {Stage: "b", Action: pipeline.ActionFailed, Reasons: []string{"exit 2", "gate failed"}}},
			false, "repro: stage b failed: exit 2; gate failed"},
		{"a blocked stage", []pipeline.Decision{{Stage: "c", Action: pipeline.ActionBlocked, Reasons: []string{"upstream stage b did not succeed"}}},
			false, "repro: stage c blocked: upstream stage b did not succeed"},
		{"a dry run's blocked stage", []pipeline.Decision{{Stage: "c", Action: pipeline.ActionBlocked, Problems: []string{"input dev (x) is missing"}}},
			true, "repro --dry-run: 1 problem would stop the pipeline once it runs: stage c: input dev (x) is missing. Nothing was run or recorded"},
		{"two problems", []pipeline.Decision{{Stage: "a", Action: pipeline.ActionWouldRun, Problems: []string{"p"}}, {Stage: "b", Action: pipeline.ActionWouldRun, Problems: []string{"q"}}},
			true, "repro --dry-run: 2 problems would stop the pipeline once it runs: stage a: p; stage b: q. Nothing was run or recorded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := Stopped(tt.ds, tt.dryRun); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
