package manifests

import (
	"context"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// RecordDataset records m, a tree HashTree digested, as an artifact of no
// run (role dataset, kind dataset) named name, with m as its manifest
// blob: what rlgate hash --record leaves in the ledger.
func RecordDataset(ctx context.Context, l *ledger.Ledger, name string, m *DatasetManifest) (ledger.Entry, error) {
	return l.RecordArtifact(ctx, "", ledger.Artifact{Role: records.RoleDataset, Name: name, Kind: records.ArtifactDataset, Digest: m.Digest}, m)
}

// RecordCheckpoint records m as an artifact of no run (role and kind
// checkpoint) named name, by its model identity, with m as its manifest
// blob: what rlgate ckpt digest --record leaves in the ledger.
func RecordCheckpoint(ctx context.Context, l *ledger.Ledger, name string, m *CheckpointManifest) (ledger.Entry, error) {
	return l.RecordArtifact(ctx, "", ledger.Artifact{Role: records.RoleCheckpoint, Name: name, Kind: records.ArtifactCheckpoint, Digest: m.Identity}, m)
}

// RecordFile records a file a command wrote outside any run (role output,
// kind file) named name, by its digest (HashFile), with manifest, which
// says how it was made, as its manifest blob: what rlgate data render
// leaves in the ledger.
func RecordFile(ctx context.Context, l *ledger.Ledger, name string, digest ledger.Digest, manifest any) (ledger.Entry, error) {
	return l.RecordArtifact(ctx, "", ledger.Artifact{Role: records.RoleOutput, Name: name, Kind: records.ArtifactFile, Digest: digest}, manifest)
}
