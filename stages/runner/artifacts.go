package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
)

// ArtifactBody is the body of the artifact entries a run writes: the
// fields the ledger derives, plus where the bytes were and where they came
// from.
type ArtifactBody struct {
	ledger.Artifact
	Path      string         `json:"path"`
	Files     int            `json:"files,omitempty"`
	Bytes     int64          `json:"bytes,omitempty"`
	Canonical *ledger.Digest `json:"canonical,omitempty"` // configs: canonical JSON blob
	// Original is, for a config whose secrets were redacted, the digest of
	// the file as read (not stored; Digest names what is); Redacted names
	// the values replaced ("openai.api_key", "headers[0]").
	Original   *ledger.Digest `json:"original,omitempty"`
	Redacted   []string       `json:"redacted,omitempty"`
	ProducedBy *Lineage       `json:"produced_by,omitempty"` // inputs: the run whose output this was
}

// Lineage links an input to the run that wrote the same digest as output.
type Lineage struct {
	Run string `json:"run"`
	Seq int64  `json:"seq"`
}

// isCheckpoint reports whether path is a safetensors file or a directory
// holding safetensors files at its top level.
func isCheckpoint(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if !fi.IsDir() {
		return filepath.Ext(path) == ".safetensors"
	}
	m, _ := filepath.Glob(filepath.Join(path, "*.safetensors"))
	return len(m) > 0
}

// Digested is a path digested the way runs record it.
type Digested struct {
	Kind     records.ArtifactKind // ArtifactCheckpoint or ArtifactDataset
	Digest   ledger.Digest
	Files    int
	Bytes    int64
	Manifest any // *manifests.CheckpointManifest or *manifests.DatasetManifest
}

// DigestPath digests path as a checkpoint (its digest is the model
// identity, which survives re-sharding) when it is a safetensors file or a
// directory holding them, and as a dataset tree otherwise.
func DigestPath(ctx context.Context, path string) (Digested, error) {
	if isCheckpoint(path) {
		m, err := manifests.BuildCheckpointManifest(ctx, path)
		if err != nil {
			return Digested{}, err
		}
		return Digested{Kind: records.ArtifactCheckpoint, Digest: m.Identity, Files: len(m.Files), Bytes: m.Size, Manifest: m}, nil
	}
	m, err := manifests.HashTree(ctx, path)
	if err != nil {
		return Digested{}, err
	}
	return Digested{Kind: records.ArtifactDataset, Digest: m.Digest, Files: m.Files, Bytes: m.Bytes, Manifest: m}, nil
}

// hashArtifact digests path and stores its manifest as a blob.
func hashArtifact(ctx context.Context, l *ledger.Ledger, role records.Role, name, path string) (ArtifactBody, ledger.Digest, error) {
	a := ArtifactBody{Artifact: ledger.Artifact{Role: role, Name: name}, Path: path}
	dg, err := DigestPath(ctx, path)
	if err != nil {
		return a, ledger.Digest{}, fmt.Errorf("%s %s: %w", role, name, err)
	}
	a.Kind, a.Digest, a.Files, a.Bytes = dg.Kind, dg.Digest, dg.Files, dg.Bytes
	body, err := ledger.CanonicalJSON(dg.Manifest)
	if err != nil {
		return a, ledger.Digest{}, err
	}
	blob, _, err := l.PutBlob(bytes.NewReader(body))
	if err != nil {
		return a, ledger.Digest{}, err
	}
	a.Manifest = &blob
	return a, blob, nil
}

// hashInputs digests a run's declared inputs with their lineage, records
// their digests in start, and returns their artifact bodies and blobs.
func hashInputs(ctx context.Context, l *ledger.Ledger, inputs []Named, start *StartBody) ([]ArtifactBody, []ledger.Digest, error) {
	var arts []ArtifactBody
	var blobs []ledger.Digest
	if len(inputs) > 0 {
		start.Inputs = map[string]ledger.Digest{}
	}
	for _, in := range inputs {
		a, blob, err := hashArtifact(ctx, l, records.RoleInput, in.Name, in.Path)
		if err != nil {
			return nil, nil, err
		}
		if a.ProducedBy, err = lineage(ctx, l, a.Digest); err != nil {
			return nil, nil, err
		}
		start.Inputs[in.Name] = a.Digest
		arts, blobs = append(arts, a), append(blobs, blob)
	}
	return arts, blobs, nil
}

// OutputRecord digests path as a run records its outputs (DigestPath,
// the manifest stored as a blob) and returns the artifact record to append
// under run, with the digest. A command that writes files itself (synth,
// export) records them with it, so that a later rlgate run --in of the same
// path finds the run that produced it.
func OutputRecord(ctx context.Context, l *ledger.Ledger, run, name, path string) (ledger.Record, ledger.Digest, error) {
	a, blob, err := hashArtifact(ctx, l, records.RoleOutput, name, path)
	if err != nil {
		return ledger.Record{}, ledger.Digest{}, err
	}
	return ledger.Record{Kind: records.KindArtifact, Run: run, Body: a, Blobs: []ledger.Digest{blob}}, a.Digest, nil
}

// lineage finds the latest run that recorded d as an output.
func lineage(ctx context.Context, l *ledger.Ledger, d ledger.Digest) (*Lineage, error) {
	rows, err := l.ArtifactsByDigest(ctx, d)
	if err != nil {
		return nil, err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Role == records.RoleOutput {
			return &Lineage{Run: rows[i].Run, Seq: rows[i].Seq}, nil
		}
	}
	return nil, nil
}

// SameOutputs checks files just written again against the outputs a run
// recorded before in its run.end body ("outputs", as EndBody has them): a
// command that writes deterministic files (synth, export) finds its run
// recorded and proves the files unchanged instead of recording it twice.
// It returns the recorded run.
func SameOutputs(ctx context.Context, l *ledger.Ledger, run string, outputs map[string]ledger.Digest) (ledger.Run, error) {
	r, err := l.RunStatus(ctx, run)
	if err != nil {
		return r, err
	}
	if !r.EndedOK() {
		return r, fmt.Errorf("run %s is %s. Try: another --run", run, r.Status)
	}
	e, err := l.EntryBySeq(ctx, *r.EndedSeq)
	if err != nil {
		return r, err
	}
	var end struct {
		Outputs map[string]ledger.Digest `json:"outputs"`
	}
	if err := json.Unmarshal(e.Body, &end); err != nil {
		return r, fmt.Errorf("run %s: end entry %d: %w", run, e.Seq, err)
	}
	for name, d := range outputs {
		if end.Outputs[name] != d {
			return r, fmt.Errorf("run %s: %s came out as %s, the run recorded %s. Try: another --run", run, name, d, end.Outputs[name])
		}
	}
	return r, nil
}
