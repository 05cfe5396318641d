package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout"
)

// TaskGrading is what a grading of a rollout decided about one task, and
// the gold it graded against: the grader's side of an episode, which a
// reader shows apart from what the policy saw (rollout.View).
type TaskGrading struct {
	Run     string         `json:"run"`     // the grading run
	Rollout string         `json:"rollout"` // the rollout it graded
	Metric  Metric         `json:"metric"`
	Mode    string         `json:"mode"`
	Item    TrajectoryItem `json:"item"`
	Seq     int64          `json:"seq"` // the outcomes entry holding Item
	// Gold is the task's gold, read from the recorded gold file
	// (dataset.ReadRecorded: the ledger's copy, or the file where it lies
	// now with the recorded digest); GoldError says why it could not be
	// read, and the grading stands without it.
	Gold      *gold.Gold `json:"gold,omitempty"`
	GoldError string     `json:"gold_error,omitempty"`
}

// ReadTaskGrading reads how grading run run graded task: its outcome with
// the grader's detail, and the task's gold.
func ReadTaskGrading(ctx context.Context, l *ledger.Ledger, run, task string) (*TaskGrading, error) {
	r, err := l.RunStatus(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("read grading %s: %w", run, err)
	}
	start, err := ledger.DecodeEntry[TrajectoryStart](ctx, l, r.StartedSeq)
	if err != nil {
		return nil, fmt.Errorf("read grading %s: %w", run, err)
	}
	if start.Rollout == "" {
		return nil, fmt.Errorf("read grading %s: it is a %q run, %w, so it has no episodes to show. Try: an evaluation rlgate eval recorded", run, start.Stage, ErrNotTrajectoryGrading)
	}
	rows, err := l.Outcomes(ctx, run)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(rows, func(o ledger.OutcomeRow) bool { return o.TaskID == task })
	if i < 0 {
		return nil, fmt.Errorf("read grading %s: %w: it graded no task %s", run, ledger.ErrNotFound, task)
	}
	g := &TaskGrading{Run: run, Rollout: start.Rollout, Metric: start.Metric, Mode: start.Mode, Seq: rows[i].Seq}
	if g.Item, err = outcomeItem(ctx, l, rows[i].Seq, task); err != nil {
		return nil, fmt.Errorf("read grading %s: %w", run, err)
	}
	gd, err := taskGold(ctx, l, start, task)
	if err != nil {
		g.GoldError = err.Error()
	}
	g.Gold = gd
	return g, nil
}

// outcomeItem reads the greedy item of task from outcomes entry seq, the
// grader's detail beside the outcome by field name. An entry holds many
// items; only those whose canonical JSON (as every body is) holds the
// task id's are decoded.
func outcomeItem(ctx context.Context, l *ledger.Ledger, seq int64, task string) (TrajectoryItem, error) {
	var body struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := l.DecodeBody(ctx, seq, &body); err != nil {
		return TrajectoryItem{}, err
	}
	needle, err := ledger.CanonicalJSON(task)
	if err != nil {
		return TrajectoryItem{}, err
	}
	for _, raw := range body.Items {
		var it TrajectoryItem
		if !bytes.Contains(raw, needle) {
			continue
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return it, fmt.Errorf("entry %d: %w", seq, err)
		}
		if it.TaskID == task && it.Sample == 0 {
			return it, nil
		}
	}
	return TrajectoryItem{}, fmt.Errorf("outcomes entry %d holds no item of task %s", seq, task)
}

// taskGold reads the gold of task from the gold file the grading
// recorded, beside the tasks the rollout read.
func taskGold(ctx context.Context, l *ledger.Ledger, start TrajectoryStart, task string) (*gold.Gold, error) {
	rs, err := rollout.ReadStart(ctx, l, start.Rollout)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(filepath.Dir(rs.Tasks), dataset.GoldFile)
	raw, err := dataset.ReadRecorded(ctx, l, path, start.GoldDigest)
	if err != nil {
		return nil, err
	}
	golds, err := gold.Parse(path, raw)
	if err != nil {
		return nil, err
	}
	for i := range golds {
		if golds[i].ID == task {
			return &golds[i], nil
		}
	}
	return nil, fmt.Errorf("the gold file %s (%s) has no task %s", path, start.GoldDigest, task)
}
