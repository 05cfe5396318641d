package ledger

import "github.com/rlgate/rlgate/ledger/records"

// RunResume is the part of a run.resume body the ledger reads: nothing;
// the entry itself reopens the run, and its writer records why.
type RunResume struct{}

// The body types of the kinds the ledger reads itself (docs/ARCHITECTURE.md,
// "Entry kinds"); writers extend them by embedding.
func init() {
	records.Register[InitBody](records.KindInit, 1)
	records.Register[RunStart](records.KindRunStart, 1)
	records.Register[RunEnd](records.KindRunEnd, 1)
	records.Register[RunResume](records.KindRunResume, 1)
	records.Register[Artifact](records.KindArtifact, 1)
	records.Register[Metrics](records.KindMetrics, 1)
	records.Register[PackedMetrics](records.KindMetrics, 2)
	records.Register[Outcomes](records.KindOutcomes, 1)
}

// EndedOK reports whether the run ended and ended ok: the only runs whose
// outputs a later step may take as done.
func (r Run) EndedOK() bool { return r.Status == records.StatusOK && r.EndedSeq != nil }
