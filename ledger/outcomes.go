package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	"github.com/rlgate/rlgate/ledger/records"
)

// Outcomes is the part of an outcomes body the ledger derives; graders add
// per-item detail (index, db_id, difficulty, error, ...) beside these fields.
type Outcomes struct {
	Items []Outcome `json:"items"`
}

// Outcome is one graded (task, sample) of an evaluation run. Sample is 0
// for greedy decoding; a task evaluated with n samples has 0..n-1.
type Outcome struct {
	TaskID  string   `json:"task_id"`
	Sample  int      `json:"sample"`
	Correct bool     `json:"correct"`
	Reward  *float64 `json:"reward,omitempty"`
}

// deriveOutcomes adds one row per item; a (run, task, sample) graded twice
// is refused, which keeps a resumed evaluation free of duplicates. The
// rows go several to a statement: one statement per row spent most of
// the time of appending a grading's outcomes in the driver.
func (d *deriver) deriveOutcomes(e *Entry, o Outcomes) error {
	if e.Run == "" {
		return fmt.Errorf("%w: outcomes need a run id", ErrBadRecord)
	}
	const width = 6
	args := make([]any, 0, width*len(o.Items))
	for _, it := range o.Items {
		if it.TaskID == "" {
			return fmt.Errorf("%w: outcome without a task_id", ErrBadRecord)
		}
		var reward any
		if it.Reward != nil && !math.IsNaN(*it.Reward) {
			reward = asRecorded(*it.Reward)
		}
		args = append(args, e.Run, it.TaskID, it.Sample, it.Correct, reward, e.Seq)
	}
	if err := d.insertRows("outcomes(run, task_id, sample, correct, reward, seq)", width, args); err != nil {
		return fmt.Errorf("outcomes of run %s (each task and sample is graded once a run): %w", e.Run, err)
	}
	return nil
}

// OutcomeRow is a row of the derived outcomes table, with the seq of the
// entry it came from.
type OutcomeRow struct {
	Outcome
	Seq int64 `json:"seq"`
}

// Outcomes lists a run's outcomes ordered by task id and sample.
func (l *Ledger) Outcomes(ctx context.Context, run string) ([]OutcomeRow, error) {
	if l.chk != nil {
		if err := l.derive(ctx, records.KindOutcomes, run); err != nil {
			return nil, err
		}
	}
	rows, err := l.db.QueryContext(ctx, "SELECT task_id, sample, correct, reward, seq FROM outcomes WHERE run = ? ORDER BY task_id, sample", run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []OutcomeRow
	for rows.Next() {
		var r OutcomeRow
		var reward sql.NullFloat64
		if err := rows.Scan(&r.TaskID, &r.Sample, &r.Correct, &reward, &r.Seq); err != nil {
			return nil, err
		}
		if reward.Valid {
			v := reward.Float64
			r.Reward = &v
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
