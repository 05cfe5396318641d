package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/manifests/manifeststest"
	"github.com/rlgate/rlgate/workflow/digest"
	"github.com/urfave/cli/v3"
)

// sampleCkpt is a real safetensors file with nine tensors, one per integer
// and float dtype; the checkpoint tests derive the others from it.
const sampleCkpt = "../../testdata/safetensors/overall.safetensors"

// writeTestCheckpoints writes the checkpoints of the ckpt and audit
// commands' tests, derived from sampleCkpt.
func writeTestCheckpoints(t *testing.T) manifeststest.Checkpoints {
	return manifeststest.WriteCheckpoints(t, sampleCkpt)
}

// TestCkptDigest checks what ckpt digest prints (workflow/digest tests
// what it computes and records): --json --record the manifest with where
// it was recorded, and text the identity, every file and every tensor.
func TestCkptDigest(t *testing.T) {
	t.Parallel()
	c := writeTestCheckpoints(t)
	l := ledgertest.New(t)
	code, out, errOut := rlgate(t, "--ledger", l.Dir(), "ckpt", "digest", "--json", "--record", c.Trained)
	if code != exitOK {
		t.Fatalf("ckpt digest --json --record: exit %d: %s", code, errOut)
	}
	var got digest.CheckpointDigest
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Identity.IsZero() || len(got.Tensors) != 9 || got.Name != "trained" || got.Seq == 0 || got.Manifest == nil {
		t.Fatalf("--json --record printed %s", out)
	}
	for _, ts := range got.Tensors {
		if ts.Digest.IsZero() || ts.Size == 0 || ts.DType == "" || ts.Shape == nil {
			t.Errorf("tensor %+v lacks a field", ts)
		}
	}

	code, text, errOut := rlgate(t, "ckpt", "digest", c.Resharded)
	if code != exitOK {
		t.Fatalf("ckpt digest: exit %d: %s", code, errOut)
	}
	for _, s := range []string{got.Identity.String() + "  " + c.Resharded, manifests.IndexFile, "model-00003-of-00003.safetensors", "F64", "4 files, 9 tensors"} {
		if !strings.Contains(text, s) {
			t.Errorf("text output lacks %q:\n%s", s, text)
		}
	}
}

// TestCkptDiff checks what ckpt diff prints: the table sorted by
// ‖Δ‖/‖A‖ and the summary line, the identities with --hash --json, and
// exit 1 with every mismatch for checkpoints of other tensors.
func TestCkptDiff(t *testing.T) {
	t.Parallel()
	c := writeTestCheckpoints(t)
	code, out, errOut := rlgate(t, "ckpt", "diff", c.Base, c.Resharded)
	if code != exitOK {
		t.Fatalf("ckpt diff: exit %d: %s", code, errOut)
	}
	// The table is sorted by ‖Δ‖/‖A‖: the one changed tensor, f, first.
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.Contains(lines[3], "│ f ") || !strings.Contains(out, "1 of 9 tensors changed, 8 bit-identical; 1 of 54 elements changed") {
		t.Errorf("text output:\n%s", out)
	}

	code, out, errOut = rlgate(t, "ckpt", "diff", "--hash", "--json", c.Base, c.NoUpdate)
	if code != exitOK {
		t.Fatalf("ckpt diff --hash --json: exit %d: %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got["tensors_changed"] != 0.0 || got["tensors_identical"] != 9.0 || got["model_identity_a"] != got["model_identity_b"] || got["model_identity_a"] == nil {
		t.Errorf("--hash --json of equal weights: %s", out)
	}

	code, _, errOut = rlgate(t, "ckpt", "diff", sampleCkpt, "../../testdata/safetensors/d.safetensors")
	if code != exitError || !strings.Contains(errOut, "8 mismatches:") {
		t.Errorf("mismatched tensors: exit %d (want %d): %s", code, exitError, errOut)
	}
}

// TestFlagErrorsExit2 runs the commands on their own, before they are
// registered in the app, so it checks their own argument checks.
func TestFlagErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cmd  func() *cli.Command
		args []string
	}{
		{newCkptDiffCommand, []string{"--atol=-1", sampleCkpt, sampleCkpt}},
		{newCkptDiffCommand, []string{"--rtol", "NaN", sampleCkpt, sampleCkpt}},
		{newCkptDiffCommand, []string{sampleCkpt}},
		{newCkptDigestCommand, []string{sampleCkpt, sampleCkpt}},
		{newAuditWeightsCommand, []string{"--base", sampleCkpt, "--trained", sampleCkpt, "--evaluated", "blake3:00"}},
		{newAuditWeightsCommand, []string{"--base", sampleCkpt, "--trained", sampleCkpt, "--atol=-1"}},
	} {
		cmd := tt.cmd()
		cmd.Writer = new(bytes.Buffer)
		err := cmd.Run(context.Background(), append([]string{cmd.Name}, tt.args...))
		if code := exitCode(context.Background(), err); code != exitUsage {
			t.Errorf("%s %v: exit %d (%v), want %d", cmd.Name, tt.args, code, err, exitUsage)
		}
	}
}
