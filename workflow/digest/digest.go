// Package digest is rlgate hash and rlgate ckpt: files and trees hashed
// (manifests.HashTree) and a checkpoint hashed (its per-tensor manifest
// and model identity, manifests.BuildCheckpointManifest), each recorded
// in the ledger on request, as a dataset or a checkpoint artifact; and
// two checkpoints diffed tensor by tensor (manifests.DiffCheckpoints).
package digest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Recorded is where a manifest was recorded: under Name, as the artifact
// entry Seq, in the blob Manifest; zero when it was not.
type Recorded struct {
	Name     string         `json:"name,omitempty"`
	Seq      int64          `json:"seq,omitempty"`
	Manifest *ledger.Digest `json:"manifest,omitempty"`
}

// recordAs records a manifest of path through rec, under name or, when name
// is empty, the path's base name.
func recordAs(name, path string, rec func(name string) (ledger.Entry, error)) (Recorded, error) {
	if name == "" {
		name = filepath.Base(filepath.Clean(path))
	}
	e, err := rec(name)
	if err != nil {
		return Recorded{}, err
	}
	return Recorded{Name: name, Seq: e.Seq, Manifest: &e.Blobs[0]}, nil
}

// CheckpointDigest is a checkpoint's manifest, and where it was recorded.
type CheckpointDigest struct {
	*manifests.CheckpointManifest
	Path string `json:"path"`
	Recorded
}

// Checkpoint hashes the checkpoint at path. With record, it stores the
// manifest in the ledger in dir as the checkpoint artifact name (the
// path's base name when empty); the ledger is opened first, so a missing
// one is said before minutes of hashing.
func Checkpoint(ctx context.Context, dir, path string, record bool, name string) (*CheckpointDigest, error) {
	var l *ledger.Ledger
	if record {
		var err error
		if l, err = ledger.Open(ctx, dir); err != nil {
			return nil, err
		}
		defer l.Close()
	}
	m, err := manifests.BuildCheckpointManifest(ctx, path)
	if err != nil {
		return nil, err
	}
	d := &CheckpointDigest{CheckpointManifest: m, Path: path}
	if l == nil {
		return d, nil
	}
	d.Recorded, err = recordAs(name, path, func(name string) (ledger.Entry, error) { return manifests.RecordCheckpoint(ctx, l, name, m) })
	if err != nil {
		return nil, err
	}
	return d, nil
}

// TreeDigest is the manifest of a file or directory tree, and where it
// was recorded.
type TreeDigest struct {
	*manifests.DatasetManifest
	Recorded
}

// Trees hashes each of paths, a file or a directory tree. With record, it
// stores each manifest in the ledger in dir as a dataset artifact, named
// name (only with one path) or the path's base name; the ledger is opened
// before any hashing.
func Trees(ctx context.Context, dir string, paths []string, record bool, name string) ([]TreeDigest, error) {
	switch {
	case len(paths) == 0:
		return nil, usage.Errorf("hash needs at least one PATH")
	case name != "" && len(paths) != 1:
		return nil, usage.Errorf("--name names one dataset; give one PATH")
	}
	var l *ledger.Ledger
	if record {
		var err error
		if l, err = ledger.Open(ctx, dir); err != nil {
			return nil, err
		}
		defer l.Close()
	}
	var out []TreeDigest
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := manifests.HashTree(ctx, p)
		if err != nil {
			return nil, err
		}
		r := TreeDigest{DatasetManifest: m}
		if l != nil {
			if r.Recorded, err = recordAs(name, p, func(name string) (ledger.Entry, error) { return manifests.RecordDataset(ctx, l, name, m) }); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Diffed is the tensor-by-tensor diff of checkpoints A and B.
type Diffed struct {
	A string `json:"a"`
	B string `json:"b"`
	// IdentityA and IdentityB are the model identities, when hashed.
	IdentityA *ledger.Digest `json:"model_identity_a,omitempty"`
	IdentityB *ledger.Digest `json:"model_identity_b,omitempty"`
	*manifests.CheckpointDiff
}

// Diff compares checkpoints a and b under tol. With hash it hashes both
// first, reports their identities and skips the tensors whose digests are
// equal. Checkpoints that do not hold the same tensors are an error
// listing every mismatch, one per line.
func Diff(ctx context.Context, a, b string, tol manifests.Tolerance, hash bool) (*Diffed, error) {
	r := &Diffed{A: a, B: b}
	ra, rb := manifests.CheckpointRef{Path: a}, manifests.CheckpointRef{Path: b}
	if hash {
		for _, ref := range []*manifests.CheckpointRef{&ra, &rb} {
			m, err := manifests.BuildCheckpointManifest(ctx, ref.Path)
			if err != nil {
				return nil, err
			}
			ref.Manifest = m
		}
		r.IdentityA, r.IdentityB = &ra.Manifest.Identity, &rb.Manifest.Identity
	}
	d, err := manifests.DiffCheckpoints(ctx, ra, rb, tol)
	var mismatch *manifests.TensorMismatchError
	if errors.As(err, &mismatch) {
		return nil, fmt.Errorf("ckpt diff: A (%s) and B (%s) do not hold the same tensors; %d mismatches:\n  %s",
			a, b, len(mismatch.Mismatches), strings.Join(mismatch.Mismatches, "\n  "))
	}
	if err != nil {
		return nil, err
	}
	r.CheckpointDiff = d
	return r, nil
}
