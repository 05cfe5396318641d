package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
)

// DefaultMatrixPage is how many tasks a page of the matrix lists when
// MatrixOptions.Limit is 0, and MaxMatrixPage the most it lists: a page is
// read, not the whole benchmark.
const (
	DefaultMatrixPage = 50
	MaxMatrixPage     = 500
)

// MatrixFilter selects the tasks a matrix lists. The zero filter lists
// every paired task; fields combine (a task must pass each one set).
type MatrixFilter struct {
	// Gained is a label: the tasks that run solved and the baseline did
	// not (the tasks behind Compare's b for that run). Lost: the tasks the
	// baseline solved and that run did not (c).
	Gained string `json:"gained,omitempty"`
	Lost   string `json:"lost,omitempty"`
	// DBID and Difficulty keep the tasks of one database or one
	// difficulty level, as the baseline's grading recorded them.
	DBID       string `json:"db_id,omitempty"`
	Difficulty string `json:"difficulty,omitempty"`
	// Fragile keeps the tasks whose verdict some evaluation's grading
	// marked fragile; Unfinished those where some evaluation's chosen
	// episode was left unfinished (a transport failure, graded wrong).
	Fragile    bool `json:"fragile,omitempty"`
	Unfinished bool `json:"unfinished,omitempty"`
}

// MatrixOptions name the evaluations (as CompareOptions do: Runs and
// Baseline), the filter and the page.
type MatrixOptions struct {
	Runs     []LabeledRun
	Baseline string
	Filter   MatrixFilter
	Offset   int // tasks of the filtered list skipped
	Limit    int // tasks listed; 0: DefaultMatrixPage, at most MaxMatrixPage
}

// Matrix is, for every paired task, whether each evaluation solved it: a
// page of the tasks the filter keeps, with the counts over all of them.
type Matrix struct {
	Runs     []LabeledRun `json:"runs"`
	Baseline string       `json:"baseline"`
	Filter   MatrixFilter `json:"filter"`
	// Tasks counts the paired tasks, Selected those the filter keeps.
	Tasks    int `json:"tasks"`
	Selected int `json:"selected"`
	Offset   int `json:"offset"`
	Limit    int `json:"limit"`
	// Pairs are each run against the baseline over the tasks the filter's
	// database, difficulty, fragile and unfinished fields keep (not its
	// Gained and Lost): with those unset, Compare's b and c.
	Pairs []MatrixPair `json:"pairs"`
	// Databases and Difficulties are the values the tasks have, to filter
	// on; difficulties in the official order.
	Databases    []string    `json:"databases"`
	Difficulties []string    `json:"difficulties"`
	Rows         []MatrixRow `json:"rows"`
}

// MatrixPair is one run against the baseline: B tasks only it solved, C
// tasks only the baseline solved.
type MatrixPair struct {
	Label    string `json:"label"`
	Baseline string `json:"baseline"`
	B        int    `json:"b"`
	C        int    `json:"c"`
}

// MatrixRow is one task: where it sits and each run's grade of it, in the
// order of Matrix.Runs.
type MatrixRow struct {
	TaskID     string       `json:"task_id"`
	DBID       string       `json:"db_id"`
	Difficulty string       `json:"difficulty"`
	Cells      []MatrixCell `json:"cells"`
}

// MatrixCell is one run's grade of a task and the outcomes entry that
// recorded it.
type MatrixCell struct {
	Correct    bool               `json:"correct"`
	Verdict    grading.Verdict    `json:"verdict,omitempty"`
	Fragile    bool               `json:"fragile,omitempty"`
	StopReason rollout.StopReason `json:"stop_reason,omitempty"`
	Seq        int64              `json:"seq"`
}

// Unfinished reports whether the graded episode was left unfinished.
func (c MatrixCell) Unfinished() bool { return leftUnfinished(c.StopReason) }

// leftUnfinished reports whether an episode that stopped for r was left
// unfinished; a grading of predictions records no stop reason.
func leftUnfinished(r rollout.StopReason) bool { return r != "" && !r.Finished() }

// TaskMatrix reads the outcomes of o.Runs, pairs them as Compare does
// (the same function, so its counts are Compare's), and lists the page
// of tasks o.Filter keeps.
func TaskMatrix(ctx context.Context, l *ledger.Ledger, o MatrixOptions) (*Matrix, error) {
	rows, err := outcomeRows(ctx, l, o.Runs)
	if err != nil {
		return nil, err
	}
	details, err := readDetails(ctx, l, rows)
	if err != nil {
		return nil, err
	}
	return taskMatrix(o, rows, details)
}

// CompareWithMatrix is Compare of opts and TaskMatrix of the same runs
// and baseline under filter, on the outcomes read once: what the
// comparison page shows.
func CompareWithMatrix(ctx context.Context, l *ledger.Ledger, opts CompareOptions, filter MatrixFilter, offset, limit int) (*Comparison, *Matrix, error) {
	rows, err := outcomeRows(ctx, l, opts.Runs)
	if err != nil {
		return nil, nil, err
	}
	details, err := readDetails(ctx, l, rows)
	if err != nil {
		return nil, nil, err
	}
	c, err := compareRead(opts, rows, details)
	if err != nil {
		return nil, nil, err
	}
	m, err := taskMatrix(MatrixOptions{Runs: opts.Runs, Baseline: opts.Baseline, Filter: filter, Offset: offset, Limit: limit}, rows, details)
	return c, m, err
}

// taskMatrix is TaskMatrix on the outcome rows and task details of
// o.Runs, already read.
func taskMatrix(o MatrixOptions, rows [][]ledger.OutcomeRow, details []map[string]TaskDetail) (*Matrix, error) {
	p, err := pairOutcomes(CompareOptions{Runs: o.Runs, Baseline: o.Baseline}, rows)
	if err != nil {
		return nil, err
	}
	labels := map[string]int{}
	for i, r := range o.Runs {
		labels[r.Label] = i
	}
	for _, l := range []string{o.Filter.Gained, o.Filter.Lost} {
		if _, ok := labels[l]; l != "" && !ok {
			return nil, fmt.Errorf("task matrix: no evaluation is labelled %q. Try: one of the labels of the runs compared", l)
		}
	}
	switch {
	case o.Offset < 0:
		return nil, fmt.Errorf("task matrix: offset %d: want 0 or more", o.Offset)
	case o.Limit < 0 || o.Limit > MaxMatrixPage:
		return nil, fmt.Errorf("task matrix: limit %d: want 1 to %d, or 0 for %d", o.Limit, MaxMatrixPage, DefaultMatrixPage)
	case o.Limit == 0:
		o.Limit = DefaultMatrixPage
	}
	m := &Matrix{Runs: o.Runs, Baseline: p.opts.Baseline, Filter: o.Filter, Tasks: len(p.tasks), Offset: o.Offset, Limit: o.Limit,
		Pairs: []MatrixPair{}, Databases: []string{}, Difficulties: []string{}, Rows: []MatrixRow{}}
	where := details[p.base]
	dbs, levels := map[string]bool{}, map[string]bool{}
	for _, t := range p.tasks {
		if d := where[t]; d.DBID != "" {
			dbs[d.DBID] = true
		}
		if d := where[t]; d.Difficulty != "" {
			levels[d.Difficulty] = true
		}
	}
	m.Databases, m.Difficulties = slices.Sorted(maps.Keys(dbs)), grading.DifficultyOrder(levels)

	// in: the tasks the filter keeps before Gained and Lost, over which
	// the pairs are counted.
	in := make([]bool, len(p.tasks))
	for j, t := range p.tasks {
		d := where[t]
		in[j] = (o.Filter.DBID == "" || d.DBID == o.Filter.DBID) && (o.Filter.Difficulty == "" || d.Difficulty == o.Filter.Difficulty) &&
			(!o.Filter.Fragile || slices.ContainsFunc(details, func(ds map[string]TaskDetail) bool { return ds[t].Fragile })) &&
			(!o.Filter.Unfinished || slices.ContainsFunc(details, func(ds map[string]TaskDetail) bool { return ds[t].unfinished() }))
	}
	keep := slices.Clone(in)
	for i, r := range o.Runs {
		if i == p.base {
			continue
		}
		gained, lost := p.discordant(i)
		pr := MatrixPair{Label: r.Label, Baseline: m.Baseline}
		pr.B, pr.C = countIn(gained, in), countIn(lost, in)
		m.Pairs = append(m.Pairs, pr)
		if r.Label == o.Filter.Gained {
			onlyAt(keep, gained)
		}
		if r.Label == o.Filter.Lost {
			onlyAt(keep, lost)
		}
	}
	if o.Filter.Gained == m.Baseline || o.Filter.Lost == m.Baseline {
		clear(keep) // the baseline gains and loses nothing against itself
	}
	for j, t := range p.tasks {
		if !keep[j] {
			continue
		}
		if m.Selected >= o.Offset && len(m.Rows) < o.Limit {
			row := MatrixRow{TaskID: t, DBID: where[t].DBID, Difficulty: where[t].Difficulty, Cells: make([]MatrixCell, len(o.Runs))}
			for i := range o.Runs {
				d := details[i][t]
				row.Cells[i] = MatrixCell{Correct: p.correct[i][j], Verdict: d.Verdict, Fragile: d.Fragile, StopReason: d.StopReason, Seq: p.seq[i][j]}
			}
			m.Rows = append(m.Rows, row)
		}
		m.Selected++
	}
	return m, nil
}

// countIn counts the indexes of idx that in marks.
func countIn(idx []int, in []bool) int {
	n := 0
	for _, j := range idx {
		if in[j] {
			n++
		}
	}
	return n
}

// onlyAt unmarks every index of keep not in idx (sorted).
func onlyAt(keep []bool, idx []int) {
	next := 0
	for j := range keep {
		if next < len(idx) && idx[next] == j {
			next++
			continue
		}
		keep[j] = false
	}
}
