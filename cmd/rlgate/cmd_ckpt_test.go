package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/manifests/manifeststest"
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

func TestCkptDigest(t *testing.T) {
	c := writeTestCheckpoints(t)
	l := ledgertest.New(t)
	var out bytes.Buffer
	r, err := runCkptDigest(t.Context(), ckptDigestOptions{Dir: l.Dir(), JSON: true, Record: true, Path: c.Trained}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var got ckptDigestResult
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Identity != r.Identity || len(got.Tensors) != 9 || got.Name != "trained" || got.Seq == 0 || got.Manifest == nil {
		t.Fatalf("--json --record printed %s", out.Bytes())
	}
	for _, ts := range got.Tensors {
		if ts.Digest.IsZero() || ts.Size == 0 || ts.DType == "" || ts.Shape == nil {
			t.Errorf("tensor %+v lacks a field", ts)
		}
	}

	e, err := l.EntryBySeq(t.Context(), got.Seq)
	if err != nil {
		t.Fatal(err)
	}
	var a ledger.Artifact
	if err := json.Unmarshal(e.Body, &a); err != nil {
		t.Fatal(err)
	}
	want := ledger.Artifact{Role: "checkpoint", Name: "trained", Kind: "checkpoint", Digest: r.Identity, Manifest: got.Manifest}
	if e.Kind != records.KindArtifact || a.Role != want.Role || a.Name != want.Name || a.Kind != want.Kind || a.Digest != want.Digest || *a.Manifest != *want.Manifest {
		t.Errorf("entry %d: %s %s, want artifact %+v", e.Seq, e.Kind, e.Body, want)
	}
	blob, err := l.ReadBlob(*got.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if canon, _ := ledger.CanonicalJSON(r.CheckpointManifest); !bytes.Equal(blob, canon) {
		t.Errorf("manifest blob is not the manifest's canonical JSON")
	}

	// Text: the identity, every file and every tensor. A re-sharded copy of
	// the same weights has the same identity.
	out.Reset()
	if _, err := runCkptDigest(t.Context(), ckptDigestOptions{Path: c.Resharded}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, s := range []string{r.Identity.String() + "  " + c.Resharded, manifests.IndexFile, "model-00003-of-00003.safetensors", "F64", "4 files, 9 tensors"} {
		if !strings.Contains(text, s) {
			t.Errorf("text output lacks %q:\n%s", s, text)
		}
	}
}

func TestCkptDigestErrors(t *testing.T) {
	// The sample directory holds overall.safetensors beside one file per
	// tensor, with no index to say which copy counts.
	if _, err := runCkptDigest(t.Context(), ckptDigestOptions{Path: "../../testdata/safetensors"}, new(bytes.Buffer)); !errors.Is(err, manifests.ErrDuplicateTensor) {
		t.Errorf("two files holding the same tensor: %v, want %v", err, manifests.ErrDuplicateTensor)
	}
	_, err := runCkptDigest(t.Context(), ckptDigestOptions{Path: sampleCkpt, Record: true, Dir: filepath.Join(t.TempDir(), "none")}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "rlgate init") {
		t.Errorf("--record without a ledger: %v, want a hint to rlgate init", err)
	}
}

func TestCkptDiff(t *testing.T) {
	c := writeTestCheckpoints(t)
	var out bytes.Buffer
	r, err := runCkptDiff(t.Context(), ckptDiffOptions{A: c.Base, B: c.Resharded, Tolerance: manifests.DefaultTolerance}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if r.TensorsChanged != 1 || r.ElementsChanged != 1 || r.IdentityA != nil {
		t.Errorf("diff %+v", r.CheckpointDiff)
	}
	// The table is sorted by ‖Δ‖/‖A‖: the one changed tensor, f, first.
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 4 || !strings.Contains(lines[3], "│ f ") || !strings.Contains(out.String(), "1 of 9 tensors changed, 8 bit-identical; 1 of 54 elements changed") {
		t.Errorf("text output:\n%s", out.String())
	}

	// --hash: identities are reported and equal tensors are not read.
	out.Reset()
	r, err = runCkptDiff(t.Context(), ckptDiffOptions{A: c.Base, B: c.NoUpdate, Tolerance: manifests.DefaultTolerance, Hash: true, JSON: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["tensors_changed"] != 0.0 || got["tensors_identical"] != 9.0 || got["model_identity_a"] != got["model_identity_b"] || got["model_identity_a"] == nil {
		t.Errorf("--hash --json of equal weights: %s", out.Bytes())
	}

	// A looser tolerance hides the change.
	r, err = runCkptDiff(t.Context(), ckptDiffOptions{A: c.Base, B: c.Trained, Tolerance: manifests.Tolerance{ATol: 1}}, new(bytes.Buffer))
	if err != nil || r.ElementsChanged != 0 || r.TensorsIdentical != 8 {
		t.Errorf("atol 1: %v, %+v", err, r)
	}
}

// TestCkptDiffMismatch checks that every tensor that differs in name,
// dtype or shape is listed, one per line.
func TestCkptDiffMismatch(t *testing.T) {
	_, err := runCkptDiff(t.Context(), ckptDiffOptions{A: sampleCkpt, B: "../../testdata/safetensors/d.safetensors", Tolerance: manifests.DefaultTolerance}, new(bytes.Buffer))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "8 mismatches:") || strings.Count(msg, "only in A") != 8 || !strings.Contains(msg, "\n  \"B\": only in A") {
		t.Errorf("error:\n%s", msg)
	}
	if code := exitCode(t.Context(), err); code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
}

// TestFlagErrorsExit2 runs the commands on their own, before they are
// registered in the app, so it checks their own argument checks.
func TestFlagErrorsExit2(t *testing.T) {
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
