package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/pipeline"
)

// executeIn lays out dir as Run would around a pipeline file of its own
// (the demo's needs the rlgate binary, which cmd/rlgate's TestDemo runs),
// makes its ledger, and runs Execute on it.
func executeIn(t *testing.T, dir, pipelineText string) (*Summary, error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, labdemo.PipelineFile), []byte(pipelineText), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Init(context.Background(), filepath.Join(dir, ledger.DefaultDir))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return Execute(context.Background(), dir, nil, Options{Seed: 1})
}

// TestExecuteStagesSeeTheDemo: a stage of the demo finds the demo's .bin
// first on PATH and records into the demo's ledger whatever the caller's
// RLGATE_LEDGER says; a pipeline without a gate ends in an error saying
// the gate did not run, never a pass, and the summary holds the decisions.
func TestExecuteStagesSeeTheDemo(t *testing.T) {
	t.Setenv(ledger.EnvLedger, filepath.Join(t.TempDir(), "someone-elses-ledger"))
	dir := t.TempDir()
	s, err := executeIn(t, dir, `stages:
  env:
    cmd: [sh, -c, 'echo "$PATH" > out/env.txt && echo "$RLGATE_LEDGER" >> out/env.txt']
    outs: {env: out/env.txt}
    gpu: off
`)
	if err == nil || err.Error() != "demo: the gate did not run" || errors.As(err, new(*CheckFailed)) {
		t.Errorf("a pipeline without a gate: %v, want the gate did not run (not a check failure)", err)
	}
	if s == nil || len(s.Decisions) != 1 || s.Decisions[0].Action != pipeline.ActionRan {
		t.Fatalf("summary %+v", s)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], filepath.Join(dir, binDir)+string(os.PathListSeparator)) || lines[1] != filepath.Join(dir, ledger.DefaultDir) {
		t.Errorf("the stage saw PATH and %s:\n%s\nwant %s first and %s", ledger.EnvLedger, b, filepath.Join(dir, binDir), filepath.Join(dir, ledger.DefaultDir))
	}
}

// TestExecuteNamesTheStageThatFailed: a stage that fails without a
// pre-flight check stopping it is an error (not a check failure) naming
// the stage and the command that shows its log; a stage that could not
// run is named with why.
func TestExecuteNamesTheStageThatFailed(t *testing.T) {
	dir := t.TempDir()
	s, err := executeIn(t, dir, "stages:\n  broken:\n    cmd: [sh, -c, 'exit 7']\n    gpu: off\n")
	if s == nil || err == nil || errors.As(err, new(*CheckFailed)) || !strings.HasPrefix(err.Error(), "demo: stage broken failed: ") ||
		!strings.HasSuffix(err.Error(), ". Try: rlgate --ledger "+filepath.Join(dir, ledger.DefaultDir)+" log --run "+s.Decisions[0].Run) {
		t.Errorf("a failed stage: %v", err)
	}
	dir = t.TempDir()
	s, err = executeIn(t, dir, "stages:\n  starved:\n    cmd: [true]\n    deps: {data: missing.txt}\n    gpu: off\n")
	if s == nil || err == nil || errors.As(err, new(*CheckFailed)) || !strings.HasPrefix(err.Error(), "demo: stage starved did not run: first run; input data (") {
		t.Errorf("a stage missing its input: %v", err)
	}
}
