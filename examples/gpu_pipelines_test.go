package examples

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/pipeline"
)

// TestGPUPipelinesDryRun: examples/skyrl, examples/verl and examples/trl parse, hold
// every stage of the pipeline rlgate demo writes with the same upstream
// stages, gate it with the demo's policy, call their trainers' real entry
// points, and, given the inputs no stage makes (the split benchmark, the
// trainer scripts), a dry run of each plans every stage to run.
func TestGPUPipelinesDryRun(t *testing.T) {
	demoFiles, err := demo.Files(demo.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ddir := t.TempDir()
	os.WriteFile(filepath.Join(ddir, demo.PipelineFile), demoFiles[demo.PipelineFile], 0o644)
	demoPipe, err := pipeline.Load(filepath.Join(ddir, demo.PipelineFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, entry string }{
		{"skyrl", "skyrl_train.entrypoints.main_base"},
		{"verl", "verl.trainer.main_ppo"},
		{"trl", "accelerate launch train_trl.py grpo"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			policy, err := os.ReadFile(filepath.Join(c.dir, demo.PolicyFile))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(demoFiles[demo.PolicyFile]), string(policy)); d != "" {
				t.Errorf("%s/gate.yaml is not the demo's policy (-demo +example):\n%s", c.dir, d)
			}
			// The example's files, laid out as in the repository.
			root := t.TempDir()
			dir := filepath.Join(root, c.dir)
			if err := os.CopyFS(dir, os.DirFS(c.dir)); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile("with-vllm.sh")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(root, "with-vllm.sh"), raw, 0o755)
			f, err := pipeline.Load(filepath.Join(dir, demo.PipelineFile))
			if err != nil {
				t.Fatal(err)
			}
			upstream := map[string][]string{}
			var cmds strings.Builder
			for _, s := range f.Stages {
				upstream[s.Name] = slices.Sorted(slices.Values(s.Upstream))
				cmds.WriteString(strings.Join(s.Cmd, " ") + "\n")
			}
			for _, s := range demoPipe.Stages {
				got, ok := upstream[s.Name]
				if !ok {
					t.Errorf("no stage %s, which the demo's pipeline has", s.Name)
					continue
				}
				// The GPU pipelines add an export stage between synthesis and training.
				got = slices.DeleteFunc(slices.Clone(got), func(u string) bool { return u == "export" })
				want := slices.Sorted(slices.Values(s.Upstream))
				if s.Name == "sft" || s.Name == "rl1" || s.Name == "rl2" || s.Name == "noupdate" {
					want = slices.DeleteFunc(want, func(u string) bool { return u == "synthesize" })
					got = slices.DeleteFunc(got, func(u string) bool { return u == "synthesize" })
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("stage %s reads other stages than the demo's (-demo +example):\n%s", s.Name, d)
				}
			}
			scripts, _ := filepath.Glob(filepath.Join(dir, "*.sh"))
			for _, sc := range scripts {
				b, _ := os.ReadFile(sc)
				cmds.Write(b)
			}
			if !strings.Contains(cmds.String(), c.entry) {
				t.Errorf("no stage or script calls %s", c.entry)
			}

			// Inputs no stage writes: the unpacked benchmark is real; the
			// rest only has to exist for the dry run.
			if _, err := demo.Unpack(filepath.Join(dir, demo.SpiderDir), demo.UnpackOptions{}); err != nil {
				t.Fatal(err)
			}
			ds, err := pipeline.Repro(context.Background(), ledgertest.New(t), f, nil, pipeline.Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			var notPlanned []string
			for _, d := range ds {
				if d.Action != pipeline.ActionWouldRun {
					notPlanned = append(notPlanned, d.Stage+": "+d.Action+" ("+strings.Join(d.Reasons, "; ")+")")
				}
			}
			if len(ds) != len(f.Stages) || len(notPlanned) > 0 {
				t.Errorf("dry run of %d stages: not planned to run:\n%s", len(f.Stages), strings.Join(notPlanned, "\n"))
			}
		})
	}
}
