package examples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/pipeline"
)

// TestLlamaFactoryPipelineDryRun: examples/llamafactory parses, trains
// with llamafactory-cli on its sft.yaml, gates sft > base with a policy
// whose training run is one of its stages, and, given the split benchmark,
// a dry run plans every stage to run.
func TestLlamaFactoryPipelineDryRun(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "llamafactory")
	if err := os.CopyFS(dir, os.DirFS("llamafactory")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("with-vllm.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "with-vllm.sh"), raw, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := pipeline.Load(filepath.Join(dir, demo.PipelineFile))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := audit.LoadPolicy(filepath.Join(dir, demo.PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]*pipeline.Stage{}
	for _, s := range f.Stages {
		stages[s.Name] = s
	}
	for _, tr := range policy.Subjects.Train {
		if stages[tr.Run] == nil {
			t.Errorf("gate.yaml trains %s with stage %s, which rlgate.yaml does not have", tr.Label, tr.Run)
		}
	}
	if s := stages["sft"]; s == nil || strings.Join(s.Cmd, " ") != "llamafactory-cli train sft.yaml" || !cmp.Equal(s.Configs, []string{"sft.yaml"}) {
		t.Errorf("stage sft does not run llamafactory-cli train on its recorded sft.yaml: %+v", s)
	}
	if _, err := demo.Unpack(filepath.Join(dir, demo.SpiderDir), demo.UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	ds, err := pipeline.Repro(context.Background(), ledgertest.New(t), f, nil, pipeline.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Action != pipeline.ActionWouldRun {
			t.Errorf("stage %s: %s (%s), want it planned to run", d.Stage, d.Action, strings.Join(d.Reasons, "; "))
		}
	}
	if len(ds) != len(f.Stages) {
		t.Errorf("dry run decided %d of %d stages", len(ds), len(f.Stages))
	}
}
