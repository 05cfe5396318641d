package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
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

// TestGateRejectionIsACheckFailure: a demo whose gate rejected the
// experiment ends in a *CheckFailed (rlgate demo exits 3 on it, which
// cmd/rlgate's TestDemo proves on the wrong-db variant) that says so with
// the verdict's summary, and the summary names every failed check. That
// the gate rejects each injected defect's class is TestGate's (cmd/rlgate),
// that each variant carries its defect lab/demo's
// TestInjectsWriteTheirDefect.
func TestGateRejectionIsACheckFailure(t *testing.T) {
	v := &audit.Verdict{Seq: 7, Failed: 2, Checks: []audit.GateCheck{
		{Name: "claim rl > sft", OK: true},
		{Name: "audit budget: " + audit.CheckSameProtocol},
		{Name: "claim rl > noupdate"},
	}}
	s := &Summary{Verdict: v}
	err := failure(context.Background(), ledgertest.New(t), s)
	if !errors.As(err, new(*CheckFailed)) || err.Error() != "demo: the gate rejected the experiment: "+v.Summary() {
		t.Errorf("a rejected experiment: %v, want a check failure with the verdict's summary", err)
	}
	if d := cmp.Diff([]string{"audit budget: " + audit.CheckSameProtocol, "claim rl > noupdate"}, s.Failed); d != "" {
		t.Errorf("failed checks (-want +got):\n%s", d)
	}
	s = &Summary{Verdict: &audit.Verdict{Seq: 7, OK: true, Checks: v.Checks[:1]}}
	if err := failure(context.Background(), ledgertest.New(t), s); err != nil || len(s.Failed) != 0 {
		t.Errorf("a passed gate: %v, failed checks %v", err, s.Failed)
	}
}
