package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

func init() { records.Register[Trajectories](records.KindTrajectories, 1) }

// Stage is the stage name of a rollout run's run.start entry.
const Stage = "rollout"

// Trajectories is the body of a trajectories entry: the blob holding the
// episodes, one JSON line each (an Episode), and one reference per line.
type Trajectories struct {
	Blob     ledger.Digest `json:"blob"`
	Episodes []EpisodeRef  `json:"episodes"`
}

// EpisodeRef summarises one recorded episode and says where its line is
// in the blob: bytes [Offset, Offset+Length), line number Line (from 0),
// without the newline.
type EpisodeRef struct {
	TaskID        string     `json:"task_id"`
	Sample        int        `json:"sample"`
	StopReason    StopReason `json:"stop_reason"`
	Turns         int        `json:"turns"`
	SQLExecutions int        `json:"sql_executions"`
	TokensIn      int        `json:"tokens_in"`
	TokensOut     int        `json:"tokens_out"`
	FinalSQL      string     `json:"final_sql"`
	Line          int        `json:"line"`
	Offset        int64      `json:"offset"`
	Length        int64      `json:"length"`
}

// Recorded is an episode reference with the entry and blob it came from.
type Recorded struct {
	EpisodeRef
	Blob ledger.Digest `json:"blob"`
	Seq  int64         `json:"seq"`
}

// Start is the body of a rollout's run.start entry: what fixes the
// evaluation (protocol, model, tasks) and how the endpoint was reached.
// A run is only resumed with the same protocol digest, model, tasks digest
// and task set.
type Start struct {
	ledger.RunStart
	Protocol       Protocol      `json:"protocol"`
	ProtocolDigest ledger.Digest `json:"protocol_digest"`
	Model          string        `json:"model"`
	// Endpoint is the endpoint, redacted; of a fleet, the first given.
	// Endpoints lists a fleet's endpoints, redacted, in the order given;
	// it is absent for one endpoint.
	Endpoint    string        `json:"endpoint"`
	Endpoints   []string      `json:"endpoints,omitempty"`
	Tasks       string        `json:"tasks"`
	TasksDigest ledger.Digest `json:"tasks_digest"`
	// TaskSet is tasks.SetDigest of the task ids run; Count is their
	// number.
	TaskSet  ledger.Digest `json:"task_set"`
	Count    int           `json:"count"`
	DBRoot   string        `json:"db_root"`
	Client   clientRecord  `json:"client"`
	Parallel int           `json:"concurrency"`

	// ModelIdentity, when given, is the model identity of the checkpoint
	// the endpoint serves, which the identity audit compares with what
	// training wrote. IdentitySource says where it came from
	// (IdentityServer, IdentityAsserted); bodies without it read as
	// asserted (Source).
	ModelIdentity  *ledger.Digest `json:"model_identity,omitempty"`
	IdentitySource string         `json:"model_identity_source,omitempty"`
}

// resumeBody is the body of the run.resume entry a continued rollout
// writes.
type resumeBody struct {
	Endpoint  string       `json:"endpoint"`
	Endpoints []string     `json:"endpoints,omitempty"` // as in Start: the list this command uses
	Client    clientRecord `json:"client"`
	Parallel  int          `json:"concurrency"`
	Done      int          `json:"done"` // episodes already recorded, skipped
}

// End is the body of a rollout's run.end entry: totals over the finished
// episodes of the run, earlier attempts of a resumed run included, the
// number of (task, sample) pairs left unfinished, and why a run that did
// not end ok ended so.
type End struct {
	ledger.RunEnd
	Episodes    int                `json:"episodes"`
	Unfinished  int                `json:"unfinished"`
	StopReasons map[StopReason]int `json:"stop_reasons"`
	TokensIn    int                `json:"tokens_in"`
	TokensOut   int                `json:"tokens_out"`
	Reason      string             `json:"reason,omitempty"`
	// Endpoints says what each endpoint did for the command that wrote
	// this entry (not earlier attempts of a resumed run).
	Endpoints []EndpointStats `json:"endpoints,omitempty"`
}

// ReadStart returns the run.start body of a rollout run, or
// ErrRunMismatch when the run is not a rollout.
func ReadStart(ctx context.Context, l *ledger.Ledger, run string) (*Start, error) {
	r, err := l.RunStatus(ctx, run)
	if err != nil {
		return nil, err
	}
	e, err := l.EntryBySeq(ctx, r.StartedSeq)
	if err != nil {
		return nil, err
	}
	var s Start
	if err := json.Unmarshal(e.Body, &s); err != nil {
		return nil, fmt.Errorf("read run %s: start entry %d: %w", run, e.Seq, err)
	}
	if s.Stage != Stage {
		return nil, fmt.Errorf("read run %s: %w: it is a %q run, not a rollout", run, ErrRunMismatch, s.Stage)
	}
	return &s, nil
}

// ReadRecorded lists the finished episodes of a run from its
// trajectories entries, in the order they were recorded, without reading
// the blobs. Unfinished episodes (StopTransport) are left out: the pair is
// played again and recorded anew.
func ReadRecorded(ctx context.Context, l *ledger.Ledger, run string) ([]Recorded, error) {
	all, err := readRefs(ctx, l, run)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, r := range all {
		if r.StopReason.Finished() {
			out = append(out, r)
		}
	}
	return out, nil
}

// ReadUnfinished lists the (task, sample) pairs of a run that have no
// finished episode but were recorded unfinished (transport failures), by
// their last unfinished episode, in the order recorded: what a rollout
// that ended failed left undone, for an audit to name.
func ReadUnfinished(ctx context.Context, l *ledger.Ledger, run string) ([]Recorded, error) {
	all, err := readRefs(ctx, l, run)
	if err != nil {
		return nil, err
	}
	finished := map[episodeKey]bool{}
	last := map[episodeKey]int{}
	for i, r := range all {
		k := episodeKey{r.TaskID, r.Sample}
		if r.StopReason.Finished() {
			finished[k] = true
		} else {
			last[k] = i
		}
	}
	var out []Recorded
	for i, r := range all {
		k := episodeKey{r.TaskID, r.Sample}
		if !finished[k] && last[k] == i && !r.StopReason.Finished() {
			out = append(out, r)
		}
	}
	return out, nil
}

// readRefs lists every episode reference of a run, unfinished ones
// included, in the order recorded. A (task, sample) may be recorded
// unfinished any number of times and then finished once; anything
// recorded after its finished episode is an error.
func readRefs(ctx context.Context, l *ledger.Ledger, run string) ([]Recorded, error) {
	// The entries are decoded first and the list made at its size: a
	// gate lists the episodes of four evaluations, and growing the list
	// by doubling copied each one several times.
	type batch struct {
		Trajectories
		seq int64
	}
	var batches []batch
	total := 0
	finished := map[episodeKey]int64{}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindTrajectories, Run: run}) {
		if err != nil {
			return nil, fmt.Errorf("read trajectories of %s: %w", run, err)
		}
		b, err := decodeTrajectories(e.Body)
		if err != nil {
			return nil, fmt.Errorf("read trajectories of %s: entry %d: %w", run, e.Seq, err)
		}
		for _, ref := range b.Episodes {
			k := episodeKey{ref.TaskID, ref.Sample}
			if prev, dup := finished[k]; dup {
				return nil, fmt.Errorf("read trajectories of %s: %w: task %s sample %d in entries %d and %d",
					run, ErrDuplicateEpisode, ref.TaskID, ref.Sample, prev, e.Seq)
			}
			if ref.StopReason.Finished() {
				finished[k] = e.Seq
			}
		}
		batches, total = append(batches, batch{b, e.Seq}), total+len(b.Episodes)
	}
	var out []Recorded
	if total > 0 {
		out = make([]Recorded, 0, total)
	}
	for _, b := range batches {
		for _, ref := range b.Episodes {
			out = append(out, Recorded{EpisodeRef: ref, Blob: b.Blob, Seq: b.seq})
		}
	}
	return out, nil
}

// ReadEpisodes reads every finished episode of a run from its blobs,
// re-hashing each blob, in the order they were recorded.
func ReadEpisodes(ctx context.Context, l *ledger.Ledger, run string) ([]Episode, error) {
	recs, err := ReadRecorded(ctx, l, run)
	if err != nil {
		return nil, err
	}
	return readEpisodes(l, run, recs)
}

// ReadEpisodesOf reads the episodes recs name (some of what ReadRecorded
// lists) from their blobs, re-hashing each blob, in the order given: a
// reader that needs a few episodes of a large run (synthesis keeps the
// passing ones) decodes only those.
func ReadEpisodesOf(l *ledger.Ledger, run string, recs []Recorded) ([]Episode, error) {
	return readEpisodes(l, run, recs)
}

// readEpisodes reads the episodes recs name from their blobs.
func readEpisodes(l *ledger.Ledger, run string, recs []Recorded) ([]Episode, error) {
	out := make([]Episode, len(recs))
	var blob []byte
	var have ledger.Digest
	var err error
	for i, r := range recs {
		if blob == nil || r.Blob != have {
			if blob, err = l.ReadBlob(r.Blob); err != nil {
				return nil, fmt.Errorf("read trajectories of %s: entry %d: %w", run, r.Seq, err)
			}
			have = r.Blob
		}
		end := r.Offset + r.Length
		if r.Offset < 0 || r.Length < 0 || end > int64(len(blob)) {
			return nil, fmt.Errorf("read trajectories of %s: entry %d: episode %s#%d lies outside its blob", run, r.Seq, r.TaskID, r.Sample)
		}
		dec := json.NewDecoder(bytes.NewReader(blob[r.Offset:end]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("read trajectories of %s: entry %d: line %d: %w", run, r.Seq, r.Line, err)
		}
		if out[i].TaskID != r.TaskID || out[i].Sample != r.Sample {
			return nil, fmt.Errorf("read trajectories of %s: entry %d: line %d holds %s#%d, the entry says %s#%d",
				run, r.Seq, r.Line, out[i].TaskID, out[i].Sample, r.TaskID, r.Sample)
		}
	}
	return out, nil
}

type episodeKey struct {
	task   string
	sample int
}
