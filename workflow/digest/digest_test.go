package digest

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/manifests/manifeststest"
)

// sampleCkpt is a real safetensors file with nine tensors, one per integer
// and float dtype; the tests derive the other checkpoints from it.
const sampleCkpt = "../../testdata/safetensors/overall.safetensors"

func TestCheckpoint(t *testing.T) {
	c := manifeststest.WriteCheckpoints(t, sampleCkpt)
	l := ledgertest.New(t)
	r, err := Checkpoint(t.Context(), l.Dir(), c.Trained, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tensors) != 9 || r.Name != "trained" || r.Seq == 0 || r.Manifest == nil {
		t.Fatalf("recorded %+v", r)
	}
	for _, ts := range r.Tensors {
		if ts.Digest.IsZero() || ts.Size == 0 || ts.DType == "" || ts.Shape == nil {
			t.Errorf("tensor %+v lacks a field", ts)
		}
	}

	e, err := l.EntryBySeq(t.Context(), r.Seq)
	if err != nil {
		t.Fatal(err)
	}
	var a ledger.Artifact
	if err := json.Unmarshal(e.Body, &a); err != nil {
		t.Fatal(err)
	}
	want := ledger.Artifact{Role: "checkpoint", Name: "trained", Kind: "checkpoint", Digest: r.Identity, Manifest: r.Manifest}
	if e.Kind != records.KindArtifact || a.Role != want.Role || a.Name != want.Name || a.Kind != want.Kind || a.Digest != want.Digest || *a.Manifest != *want.Manifest {
		t.Errorf("entry %d: %s %s, want artifact %+v", e.Seq, e.Kind, e.Body, want)
	}
	blob, err := l.ReadBlob(*r.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if canon, _ := ledger.CanonicalJSON(r.CheckpointManifest); !bytes.Equal(blob, canon) {
		t.Errorf("manifest blob is not the manifest's canonical JSON")
	}

	// A re-sharded copy of the same weights has the same identity.
	re, err := Checkpoint(t.Context(), "", c.Resharded, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if re.Identity != r.Identity || len(re.Files) != 4 || re.Seq != 0 {
		t.Errorf("re-sharded: identity %s (want %s), %d files, seq %d", re.Identity, r.Identity, len(re.Files), re.Seq)
	}
}

func TestCheckpointErrors(t *testing.T) {
	// The sample directory holds overall.safetensors beside one file per
	// tensor, with no index to say which copy counts.
	if _, err := Checkpoint(t.Context(), "", "../../testdata/safetensors", false, ""); !errors.Is(err, manifests.ErrDuplicateTensor) {
		t.Errorf("two files holding the same tensor: %v, want %v", err, manifests.ErrDuplicateTensor)
	}
	_, err := Checkpoint(t.Context(), filepath.Join(t.TempDir(), "none"), sampleCkpt, true, "")
	if err == nil || !strings.Contains(err.Error(), "rlgate init") {
		t.Errorf("recording without a ledger: %v, want a hint to rlgate init", err)
	}
}

// TestTrees: each path is hashed; recorded, each manifest is a dataset
// artifact named by its path's base name, its blob the manifest.
func TestTrees(t *testing.T) {
	l := ledgertest.New(t)
	paths := []string{"../../testdata/spider/database", sampleCkpt}
	got, err := Trees(t.Context(), l.Dir(), paths, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Files != 19 || got[0].Name != "database" || got[1].Files != 1 || got[1].Name != "overall.safetensors" {
		t.Fatalf("trees: %+v", got)
	}
	for _, r := range got {
		a, err := ledger.DecodeEntry[ledger.Artifact](t.Context(), l, r.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if a.Role != records.RoleDataset || a.Name != r.Name || a.Digest != r.Digest || a.Manifest == nil || *a.Manifest != *r.Manifest {
			t.Errorf("entry %d: %+v, want the dataset %s %s", r.Seq, a, r.Name, r.Digest)
		}
	}
	again, err := Trees(t.Context(), "", paths[:1], false, "")
	if err != nil || len(again) != 1 || again[0].Digest != got[0].Digest || again[0].Seq != 0 {
		t.Errorf("unrecorded: %+v, %v; want digest %s, no entry", again, err, got[0].Digest)
	}
}

func TestDiff(t *testing.T) {
	c := manifeststest.WriteCheckpoints(t, sampleCkpt)
	r, err := Diff(t.Context(), c.Base, c.Resharded, manifests.DefaultTolerance, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.TensorsChanged != 1 || r.ElementsChanged != 1 || r.IdentityA != nil {
		t.Errorf("diff %+v", r.CheckpointDiff)
	}

	// Hashed first: identities are reported and equal tensors are not read.
	r, err = Diff(t.Context(), c.Base, c.NoUpdate, manifests.DefaultTolerance, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.TensorsChanged != 0 || r.TensorsIdentical != 9 || r.IdentityA == nil || *r.IdentityA != *r.IdentityB {
		t.Errorf("hashed diff of equal weights: %+v, identities %v %v", r.CheckpointDiff, r.IdentityA, r.IdentityB)
	}

	// A looser tolerance hides the change.
	r, err = Diff(t.Context(), c.Base, c.Trained, manifests.Tolerance{ATol: 1}, false)
	if err != nil || r.ElementsChanged != 0 || r.TensorsIdentical != 8 {
		t.Errorf("atol 1: %v, %+v", err, r)
	}
}

// TestDiffMismatch checks that every tensor that differs in name, dtype
// or shape is listed, one per line.
func TestDiffMismatch(t *testing.T) {
	_, err := Diff(t.Context(), sampleCkpt, "../../testdata/safetensors/d.safetensors", manifests.DefaultTolerance, false)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "8 mismatches:") || strings.Count(msg, "only in A") != 8 || !strings.Contains(msg, "\n  \"B\": only in A") {
		t.Errorf("error:\n%s", msg)
	}
}
