package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/runner"
)

// TestIdentityFollowsLineageToSFTInput: with SFT, then RL in two stages
// (rl1 unlabelled, rl from rl1's output), the No-update control mirrors
// the RL stage: it must start from the RL stage's own input, the SFT
// model, so a control from SFT passes and one from Base fails, naming the
// input it should have started from and the one it did.
func TestIdentityFollowsLineageToSFTInput(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	weights := func(name, file string) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		raw, err := os.ReadFile(filepath.Join("..", "testdata", "safetensors", file))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "model.safetensors"), raw, 0o644)
		return d
	}
	base := weights("base", "f.safetensors")
	src := map[string]string{"sft": weights("w-sft", "i.safetensors"), "rl1": weights("w-rl1", "h.safetensors"), "rl": weights("w-rl", "b.safetensors")}
	train := func(run, in, out, weightsDir string) {
		t.Helper()
		res, err := runner.Execute(ctx, l, runner.Spec{Stage: run, Run: run, Dir: dir,
			Argv:    []string{"sh", "-c", "mkdir -p " + out + " && cp " + weightsDir + "/model.safetensors " + out + "/"},
			Inputs:  []runner.Named{{Name: "base", Path: in}},
			Outputs: []runner.Named{{Name: "ckpt", Path: out}}})
		if err != nil || res.Status != "ok" {
			t.Fatalf("train %s: %v %+v", run, err, res)
		}
	}
	train("sft", base, filepath.Join(dir, "sft"), src["sft"])
	train("rl1", filepath.Join(dir, "sft"), filepath.Join(dir, "rl1"), src["rl1"])
	train("rl", filepath.Join(dir, "rl1"), filepath.Join(dir, "rl"), src["rl"])
	train("lr0", base, filepath.Join(dir, "lr0"), base)
	train("lr0-from-sft", filepath.Join(dir, "sft"), filepath.Join(dir, "lr0-from-sft"), src["sft"])

	for _, c := range []struct {
		noupdate string
		ok       bool
		says     string
	}{{"lr0", false, "not from the output ckpt of training sft, where the RL stage started"}, {"lr0-from-sft", true, "wrote the model it started from"}} {
		r, err := Identity(ctx, l, Subjects{Train: []LabeledRun{{LabelSFT, "sft"}, {LabelRL, "rl"}, {LabelNoUpdate, c.noupdate}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Findings {
			if f.Check == CheckNoUpdateIdentical && (f.OK != c.ok || !strings.Contains(f.Message, c.says)) {
				t.Errorf("noupdate %s: %s ok=%v, want %v saying %q: %s", c.noupdate, f.Check, f.OK, c.ok, c.says, f.Message)
			}
		}
	}
}
