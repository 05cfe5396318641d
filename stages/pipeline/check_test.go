package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestReproDryRunProblems: a dry run names, stage by stage, what would
// fail once the stage runs: a command on no PATH directory, a command
// file no stage writes, an output whose directory is blocked by a file,
// and a gate policy the caller refuses; a command a stage writes, shell
// words and "python3 -m" style arguments are not looked up. The same
// refused gate stops a real repro before any stage runs.
func TestReproDryRunProblems(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "trainer"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "evals"), []byte("a file where a directory must be\n"), 0o644)
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte(`stages:
  build:
    cmd: "cd . && mkdir -p tools && cp bin/trainer tools/train"
    outs: {tools: tools}
    gpu: off
  train:
    cmd: [tools/train, -m, no-such-module]
    deps: {tools: tools}
    outs: {ckpt: ckpt/out}
    gpu: off
  missing:
    cmd: "no-such-tool-rlgate --flag && trainer"
    outs: {log: logs/deep/x.log}
    metrics: [evals/m.jsonl:verl]
    gpu: off
  script:
    cmd: [scripts/run.sh]
    gpu: off
  eval:
    cmd: [trainer, eval]
    deps: {ckpt: ckpt/out}
    outs: {eval: evals/base.json}
    gate: policy.yaml
    gpu: off
`), 0o644)
	f, err := Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New(`train rl: "rl3" is neither a stage nor a run`)
	opts := Options{
		DryRun:    true,
		Environ:   []string{"PATH=" + bin + string(os.PathListSeparator) + "/usr/bin" + string(os.PathListSeparator) + "/bin"},
		CheckGate: func(context.Context, string, string) error { return refused },
	}
	l := ledgertest.New(t)
	ds, err := Repro(ctx, l, f, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range ds {
		got[d.Stage] = d.Problems
	}
	want := map[string][]string{
		"build": nil,
		"train": nil,
		"missing": {"its command no-such-tool-rlgate is not on PATH. Try: install it, or put its directory on PATH",
			"metrics file (evals/m.jsonl): " + filepath.Join(dir, "evals") + " is a file, not a directory"},
		"script": {"its command scripts/run.sh is missing and no stage of the pipeline writes it"},
		"eval": {"output eval (evals/base.json): " + filepath.Join(dir, "evals") + " is a file, not a directory",
			"gate policy.yaml: " + refused.Error()},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("dry run's problems by stage (-want +got):\n%s", d)
	}

	opts.DryRun = false
	if ds, err := Repro(ctx, l, f, nil, opts); err == nil || !errors.Is(err, refused) || len(ds) != 0 {
		t.Errorf("a real repro with a refused gate: %v, decisions %+v; want the gate's error and nothing run", err, ds)
	}
	if _, err := os.Stat(filepath.Join(dir, "tools")); err == nil {
		t.Error("a stage ran although a gate policy was refused")
	}
}

// TestReproMakesOutputDirectories: a stage whose command writes its
// declared output and metrics file into directories nothing made
// ("> evals/base.json" as the eval stages of examples/verl do, a trainer's
// logs/ as their RL stages do) finds the directories there.
func TestReproMakesOutputDirectories(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte(`stages:
  eval:
    cmd: "echo '{}' > evals/deep/base.json && echo '{\"step\": 1, \"data\": {\"training/global_step\": 1}}' > logs/eval.jsonl"
    outs: {eval: evals/deep/base.json}
    metrics: [logs/eval.jsonl:verl]
    gpu: off
`), 0o644)
	f, err := Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Repro(ctx, ledgertest.New(t), f, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(t, ds); got != "eval:ran" {
		t.Errorf("decisions %s: %+v", got, ds)
	}
}
