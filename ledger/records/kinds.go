package records

// The kinds of entry a ledger holds. Every kind appended anywhere is one
// of these; docs/FORMAT.md's table of kinds lists the same set (a test
// holds the two together).
const (
	KindInit         = "ledger.init"     // the first entry of every ledger
	KindRunStart     = "run.start"       // opens a run
	KindRunEnd       = "run.end"         // closes a run with its Status
	KindRunResume    = "run.resume"      // reopens an interrupted or failed run
	KindArtifact     = "artifact"        // a file, tree, dataset or checkpoint by digest
	KindMetrics      = "metrics"         // a stage's metric points
	KindOutcomes     = "outcomes"        // graded (task, sample) items
	KindLog          = "log"             // a chunk of a stage's stdout or stderr
	KindGPUSamples   = "gpu.samples"     // nvidia-smi readings
	KindPreflight    = "preflight"       // rlgate run's reward check before the stage
	KindTrajectories = "trajectories"    // played episodes of a rollout
	KindGold         = "audit.gold"      // the gold audit's report
	KindSplit        = "audit.split"     // the split audit's report
	KindBudget       = "audit.budget"    // the budget audit's report
	KindReward       = "audit.reward"    // the reward audit's report
	KindTraining     = "audit.training"  // the training audit's report
	KindIdentity     = "audit.identity"  // the identity audit's report
	KindWeights      = "audit.weights"   // the weights audit's report
	KindComparison   = "comparison"      // a paired comparison of two graded runs
	KindVerdict      = "gate.verdict"    // the gate's decision
	KindRequest      = "publish.request" // a publish waiting for a passing verdict
	KindPublish      = "publish"         // a published bundle
	KindReproduce    = "reproduce"       // a recorded run run again and its outputs compared
)

// AuditPrefix begins the kind of every ledger audit's report: the kind is
// the prefix and the audit's name (KindGold is AuditPrefix + "gold").
const AuditPrefix = "audit."

// Status is how a run ended (run.end's status), or running while it is open
// (the derived runs table).
type Status string

// The run statuses; docs/FORMAT.md ("Run statuses") says when each is written.
const (
	StatusRunning     Status = "running"     // between run.start (or run.resume) and run.end
	StatusOK          Status = "ok"          // the run did all it set out to do
	StatusFailed      Status = "failed"      // it met an error
	StatusInterrupted Status = "interrupted" // cancelled, or its recorder died
)

// Ended reports whether s is a status a run.end may carry.
func (s Status) Ended() bool {
	return s == StatusOK || s == StatusFailed || s == StatusInterrupted
}

// Role is what an artifact was to the run that recorded it.
type Role string

// The artifact roles.
const (
	RoleInput      Role = "input"      // a run read it
	RoleOutput     Role = "output"     // a run wrote it
	RoleConfig     Role = "config"     // a configuration file a run was given
	RoleDataset    Role = "dataset"    // an imported or hashed dataset, of no run
	RoleCheckpoint Role = "checkpoint" // a checkpoint digested by ckpt digest --record, of no run
)

// ArtifactKind is what an artifact is.
type ArtifactKind string

// The artifact kinds.
const (
	ArtifactDataset    ArtifactKind = "dataset"    // a directory tree by its tree digest
	ArtifactBenchmark  ArtifactKind = "benchmark"  // an imported benchmark (tasks, gold, manifest)
	ArtifactCheckpoint ArtifactKind = "checkpoint" // a checkpoint by its model identity
	ArtifactFile       ArtifactKind = "file"       // one file by its digest
	ArtifactConfig     ArtifactKind = "config"     // a configuration in canonical form
)
