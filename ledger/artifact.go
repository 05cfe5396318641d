package ledger

import (
	"bytes"
	"context"
	"github.com/rlgate/rlgate/ledger/records"
)

// RecordArtifact stores manifest (any JSON-encodable description: a
// dataset, checkpoint or import manifest) as a canonical JSON blob, then
// appends the artifact entry naming it, in that order. The entry also
// names kept, blobs the caller stored already (an import's tasks and gold).
func (l *Ledger) RecordArtifact(ctx context.Context, run string, a Artifact, manifest any, kept ...Digest) (Entry, error) {
	body, err := CanonicalJSON(manifest)
	if err != nil {
		return Entry{}, err
	}
	blob, _, err := l.PutBlob(bytes.NewReader(body))
	if err != nil {
		return Entry{}, err
	}
	a.Manifest = &blob
	es, err := l.Append(ctx, Record{Kind: records.KindArtifact, Run: run, Body: a, Blobs: append([]Digest{blob}, kept...)})
	if err != nil {
		return Entry{}, err
	}
	return es[0], nil
}
