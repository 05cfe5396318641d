package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestReproStageEnvironAndGateRuns: a command is found on the PATH of
// Options.Environ (not rlgate's own), and the gate hears which run each
// stage decided so far ran or was up to date with.
func TestReproStageEnvironAndGateRuns(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "demo-tool"), []byte("#!/bin/sh\nmkdir -p out && echo \"$DEMO_WORD\" > out/a.txt\n"), 0o755)
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte(`stages:
  a:
    cmd: [demo-tool]
    outs: {a: out/a.txt}
    gpu: off
  g:
    cmd: [cat, out/a.txt]
    deps: {a: out/a.txt}
    gate: policy.yaml
    gpu: off
`), 0o644)
	f, err := Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	var heard map[string]string
	var started []string
	opts := Options{
		Starting: func(stage string) { started = append(started, stage) },
		Environ:  append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "DEMO_WORD=hello"),
		Gate: func(_ context.Context, policy, _ string, runs map[string]string) (bool, string, error) {
			heard = runs
			return true, "passed", nil
		},
	}
	ds, err := Repro(ctx, ledgertest.New(t), f, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(t, ds); got != "a:ran g:ran" {
		t.Fatalf("decisions %s: %+v", got, ds)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "out", "a.txt")); string(out) != "hello\n" {
		t.Errorf("out/a.txt = %q, want the tool's output with the stage environment", out)
	}
	if d := cmp.Diff([]string{"a", "g"}, started); d != "" {
		t.Errorf("stages heard starting (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"a": ds[0].Run, "g": ds[1].Run}, heard); d != "" {
		t.Errorf("runs the gate heard (-want +got):\n%s", d)
	}
}
