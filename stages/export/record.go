package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/runner"
)

// Stage is the stage name of an export run's run.start entry.
const Stage = "export"

// ErrFormat is returned when an export is asked for a format it does not
// write.
var ErrFormat = errors.New("unknown export format")

// Start is the body of an export run's run.start entry: what was read (by
// digest), how, and which task ids the output holds (TaskIDs, a blob with
// their sorted JSON array), which the split audit reads. An RL export
// records its exclusion.
type Start struct {
	ledger.RunStart
	Kind   string `json:"kind"` // sft or rl
	Format string `json:"format"`
	From   string `json:"from"` // the trajectories or tasks read
	// Tasks and TasksDigest name the tasks file the rows come from: the
	// dataset's for rl, the synthesis's for sft (when the ledger holds the
	// synthesis that wrote the trajectories).
	Tasks       string                   `json:"tasks,omitempty"`
	TasksDigest ledger.Digest            `json:"tasks_digest,omitzero"`
	Inputs      map[string]ledger.Digest `json:"inputs"`
	Protocol    *ledger.Digest           `json:"protocol_digest,omitempty"` // rl: the protocol the prompts were rendered with
	Exclusion   *Exclusion               `json:"exclusion,omitempty"`
	Rows        int                      `json:"rows"`
	TaskIDs     ledger.Digest            `json:"task_ids"`
}

// Exclusion is the list of example ids an RL export kept out (an
// example_ids.json rlgate synth wrote): the file by digest, how many ids
// it holds and how many of them were among the tasks and so left out.
type Exclusion struct {
	Path     string        `json:"path"`
	Digest   ledger.Digest `json:"digest"`
	IDs      int           `json:"ids"`
	Excluded int           `json:"excluded"`
}

// End is the body of an export run's run.end entry: the digest of every
// file written, by output name.
type End struct {
	ledger.RunEnd
	Outputs map[string]ledger.Digest `json:"outputs"`
}

// Summary is what an export reports.
type Summary struct {
	Run string `json:"run"`
	// Status is ok, or complete when the same export had been recorded
	// before (same output digests).
	Status    string                   `json:"status"`
	Kind      string                   `json:"kind"`
	Format    string                   `json:"format"`
	Rows      int                      `json:"rows"`
	Exclusion *Exclusion               `json:"exclusion,omitempty"`
	Outputs   map[string]ledger.Digest `json:"outputs"`
	Paths     map[string]string        `json:"paths"`
	StartSeq  int64                    `json:"start_seq"`
	EndSeq    int64                    `json:"end_seq"`
}

type output struct{ name, path string }

// record digests the files an export wrote and records the export run:
// its start (with the sorted task ids as a blob), the files as output
// artifacts, and its end. run defaults to export-<kind>-<12 hex digits of
// the outputs' digests>, so the same export again finds its run and
// records nothing new.
func record(ctx context.Context, l *ledger.Ledger, run string, start Start, ids []string, outs []output) (*Summary, error) {
	start.Stage = Stage
	s := &Summary{Kind: start.Kind, Format: start.Format, Rows: start.Rows, Exclusion: start.Exclusion,
		Outputs: map[string]ledger.Digest{}, Paths: map[string]string{}}
	var recs []ledger.Record
	h := ledger.Hasher()
	for _, o := range outs {
		r, d, err := runner.OutputRecord(ctx, l, "", o.name, o.path)
		if err != nil {
			return nil, err
		}
		recs, s.Outputs[o.name], s.Paths[o.name] = append(recs, r), d, o.path
		h.Write(d[:])
	}
	if run == "" {
		run = fmt.Sprintf("export-%s-%s", start.Kind, ledger.SumDigest(h).Hex()[:12])
	}
	s.Run = run
	switch prev, err := runner.SameOutputs(ctx, l, run, s.Outputs); {
	case err == nil:
		s.Status, s.StartSeq, s.EndSeq = "complete", prev.StartedSeq, *prev.EndedSeq
		return s, nil
	case !errors.Is(err, ledger.ErrNotFound):
		return nil, fmt.Errorf("export: %w", err)
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	raw, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	if start.TaskIDs, err = l.PutBlobBytes(raw); err != nil {
		return nil, err
	}
	active, err := l.StartRun(ctx, run, start, start.TaskIDs)
	if err != nil {
		return nil, err
	}
	s.StartSeq = active.Seq
	for i := range recs {
		recs[i].Run = run
	}
	if _, err := l.Append(ctx, recs...); err != nil {
		active.Fail(context.WithoutCancel(ctx), err)
		return nil, err
	}
	e, err := active.End(ctx, End{RunEnd: ledger.RunEnd{Status: records.StatusOK}, Outputs: s.Outputs})
	if err != nil {
		return nil, err
	}
	s.Status, s.EndSeq = string(records.StatusOK), e.Seq
	return s, nil
}

// writeOut writes an export's file whole or not at all, creating its
// directory when missing.
func writeOut(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return jsonl.WriteFile(path, write)
}
