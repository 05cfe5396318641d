package audit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/tasks"
	"github.com/rlgate/rlgate/stats"
)

// LabeledRun is an evaluation run under the name a comparison gives it
// (base, sft, rl, noupdate).
type LabeledRun struct {
	Label string `json:"label"`
	Run   string `json:"run"`
}

// CompareOptions selects what Compare pairs and how.
type CompareOptions struct {
	Runs     []LabeledRun
	Baseline string  // label; empty: the first run
	Alpha    float64 // 0: stats.DefaultAlpha
	Seed     uint64  // bootstrap seed, reported with the result
	B        int     // bootstrap resamples; 0: stats.DefaultResamples
	// Power is the power at which the minimum detectable effect is given;
	// 0 means 0.8.
	Power float64
	// ByDifficulty adds the paired counts per difficulty level the
	// gradings recorded (Comparison.ByDifficulty).
	ByDifficulty bool
}

// ModelResult is one run's accuracy over the paired tasks.
type ModelResult struct {
	LabeledRun
	N        int            `json:"n"`
	Correct  int            `json:"correct"`
	Accuracy float64        `json:"accuracy"`
	Wilson   stats.Interval `json:"wilson"`
}

// PairResult compares one run with the baseline on the same tasks.
// B counts tasks only this run solved, C tasks only the baseline solved.
type PairResult struct {
	Label     string                `json:"label"`
	Baseline  string                `json:"baseline"`
	Delta     float64               `json:"delta"`
	Bootstrap stats.BootstrapResult `json:"bootstrap"`
	B         int                   `json:"b"`
	C         int                   `json:"c"`
	McNemar   stats.McNemarResult   `json:"mcnemar"`
	HolmP     float64               `json:"holm_p"`
	// MDE is the smallest accuracy difference the exact McNemar test would
	// detect with the configured power at Alpha, given the observed
	// discordance: a Delta well below it means "no evidence", not "no gain".
	MDE stats.Value `json:"mde,omitzero"`
}

// Comparison is the result of Compare, as recorded in the ledger.
type Comparison struct {
	Tasks       int           `json:"tasks"`
	TaskSet     ledger.Digest `json:"task_set"` // BLAKE3 of the sorted task ids, one per line
	Baseline    string        `json:"baseline"`
	Alpha       float64       `json:"alpha"`
	Power       float64       `json:"power"`
	Seed        uint64        `json:"seed"`
	B           int           `json:"resamples"`
	Models      []ModelResult `json:"models"`
	Pairs       []PairResult  `json:"pairs"`
	Seq         int64         `json:"seq,omitempty"` // the comparison entry
	OutcomeSeqs []int64       `json:"outcome_seqs"`  // the entries the outcomes came from
	// Group is the difficulty group the tasks were restricted to, for a
	// gate claim on a group; empty: every task.
	Group Group `json:"group,omitempty"`
	// ByDifficulty breaks the comparison down by the difficulty the
	// gradings recorded (CompareOptions.ByDifficulty), in the official
	// order; empty when they recorded none.
	ByDifficulty []DifficultyRow `json:"by_difficulty,omitempty"`
}

// DifficultyRow is the comparison on the tasks of one difficulty level:
// each run's correct count and, against the baseline, the discordant
// counts and the accuracy difference. It carries no test: the levels are
// not a family the Holm correction covers; a gate claim on a group
// (docs/GATE.md) is the test of a gain on one.
type DifficultyRow struct {
	Difficulty string            `json:"difficulty"`
	Tasks      int               `json:"tasks"`
	Correct    map[string]int    `json:"correct"` // by label
	Pairs      []DifficultyDelta `json:"pairs"`
}

// DifficultyDelta is one run against the baseline within a difficulty
// level: B tasks only it solved, C tasks only the baseline solved.
type DifficultyDelta struct {
	Label    string  `json:"label"`
	Baseline string  `json:"baseline"`
	B        int     `json:"b"`
	C        int     `json:"c"`
	Delta    float64 `json:"delta"`
}

// Compare pairs the greedy (sample 0) outcomes of the runs by task id and
// compares each run with the baseline: accuracy with a Wilson interval,
// the paired difference with a bootstrap interval, the discordant counts,
// the exact McNemar p, Holm-adjusted across the comparisons, and the
// minimum detectable effect. Runs over different task sets are refused.
func Compare(ctx context.Context, l *ledger.Ledger, opts CompareOptions) (*Comparison, error) {
	if len(opts.Runs) < 2 {
		return nil, fmt.Errorf("compare: need at least two runs, got %d", len(opts.Runs))
	}
	rows, err := outcomeRows(ctx, l, opts.Runs)
	if err != nil {
		return nil, err
	}
	var details []map[string]TaskDetail
	if opts.ByDifficulty {
		if details, err = readDetails(ctx, l, rows); err != nil {
			return nil, err
		}
	}
	return compareRead(opts, rows, details)
}

// compareRead is Compare on the outcome rows and, with ByDifficulty,
// the task details of the runs, already read.
func compareRead(opts CompareOptions, rows [][]ledger.OutcomeRow, details []map[string]TaskDetail) (*Comparison, error) {
	c, err := CompareOutcomes(opts, rows)
	if err != nil || !opts.ByDifficulty {
		return c, err
	}
	c.ByDifficulty, err = byDifficulty(opts, rows, details)
	return c, err
}

// outcomeRows reads the outcomes of each run.
func outcomeRows(ctx context.Context, l *ledger.Ledger, runs []LabeledRun) ([][]ledger.OutcomeRow, error) {
	rows := make([][]ledger.OutcomeRow, len(runs))
	for i, r := range runs {
		var err error
		if rows[i], err = l.Outcomes(ctx, r.Run); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// byDifficulty compares the runs on the tasks of each difficulty level
// their gradings recorded, in the official order: the pairing's counts
// and differences only, since a level carries no test (DifficultyRow),
// so no level pays for a bootstrap it would not show.
func byDifficulty(opts CompareOptions, rows [][]ledger.OutcomeRow, details []map[string]TaskDetail) ([]DifficultyRow, error) {
	level, count, err := difficulties(opts.Runs, details)
	if err != nil {
		return nil, err
	}
	var out []DifficultyRow
	for _, d := range grading.DifficultyOrder(count) {
		p, err := pairOutcomes(opts, restrict(rows, level, d))
		if err != nil {
			return nil, fmt.Errorf("compare difficulty %s: %w", d, err)
		}
		n := float64(len(p.tasks))
		row := DifficultyRow{Difficulty: d, Tasks: len(p.tasks), Correct: map[string]int{}}
		for i, r := range p.opts.Runs {
			row.Correct[r.Label] = p.solved(i)
		}
		for i, r := range p.opts.Runs {
			if i == p.base {
				continue
			}
			gained, lost := p.discordant(i)
			// The difference as CompareOutcomes computes it, accuracy less
			// accuracy, so the figures are the same to the last bit.
			row.Pairs = append(row.Pairs, DifficultyDelta{Label: r.Label, Baseline: p.opts.Baseline, B: len(gained), C: len(lost),
				Delta: float64(row.Correct[r.Label])/n - float64(row.Correct[p.opts.Baseline])/n})
		}
		out = append(out, row)
	}
	return out, nil
}

// CompareOutcomes is Compare on outcomes already read: rows[i] are the
// outcome rows of opts.Runs[i]. A report uses it to compare the same runs
// on a subset of the tasks (one difficulty, one database) without reading
// the outcomes again.
func CompareOutcomes(opts CompareOptions, rows [][]ledger.OutcomeRow) (*Comparison, error) {
	p, err := pairOutcomes(opts, rows)
	if err != nil {
		return nil, err
	}
	opts = p.opts
	c := &Comparison{Tasks: len(p.tasks), TaskSet: tasks.SetDigest(p.tasks), Baseline: opts.Baseline, Alpha: opts.Alpha,
		Power: opts.Power, Seed: opts.Seed, B: opts.B}
	scores := make([][]float64, len(opts.Runs))
	for i, r := range opts.Runs {
		scores[i] = make([]float64, len(p.tasks))
		m := ModelResult{LabeledRun: r, N: len(p.tasks)}
		for j, ok := range p.correct[i] {
			if ok {
				scores[i][j] = 1
				m.Correct++
			}
		}
		m.Accuracy = float64(m.Correct) / float64(m.N)
		var err error
		if m.Wilson, err = stats.Wilson(m.Correct, m.N, opts.Alpha); err != nil {
			return nil, err
		}
		c.Models = append(c.Models, m)
	}
	var ps []float64
	for i, r := range opts.Runs {
		if i == p.base {
			continue
		}
		gained, lost := p.discordant(i)
		pr := PairResult{Label: r.Label, Baseline: opts.Baseline, B: len(gained), C: len(lost)}
		pr.Delta = c.Models[i].Accuracy - c.Models[p.base].Accuracy
		var err error
		if pr.Bootstrap, err = stats.PairedBootstrap(scores[i], scores[p.base], stats.BootstrapOptions{B: opts.B, Seed: opts.Seed, Alpha: opts.Alpha}); err != nil {
			return nil, err
		}
		if pr.McNemar, err = stats.McNemar(pr.B, pr.C); err != nil {
			return nil, err
		}
		if pr.MDE, err = stats.MinDetectableEffect(len(p.tasks), pr.B+pr.C, opts.Alpha, opts.Power); err != nil {
			return nil, err
		}
		ps = append(ps, pr.McNemar.ExactP)
		c.Pairs = append(c.Pairs, pr)
	}
	holm, err := stats.Holm(ps, opts.Alpha)
	if err != nil {
		return nil, err
	}
	for i := range c.Pairs {
		c.Pairs[i].HolmP = holm.Adjusted[i]
	}
	c.OutcomeSeqs = p.outcomeSeqs()
	return c, nil
}

// pairing is the greedy (sample 0) outcomes of runs paired by task id:
// what Compare tests and what the matrix lists (matrix.go), read by one
// function so that both count b and c alike.
type pairing struct {
	opts    CompareOptions // with the defaults filled in
	tasks   []string       // the paired task ids, sorted
	correct [][]bool       // correct[i][j]: run i solved tasks[j]
	seq     [][]int64      // seq[i][j]: the outcomes entry of run i that graded tasks[j]
	base    int            // the baseline's index in opts.Runs
}

// pairOutcomes pairs the greedy outcomes of opts.Runs (rows[i] those of
// opts.Runs[i]) by task id, refusing runs without outcomes, an unknown
// baseline and runs over different task sets.
func pairOutcomes(opts CompareOptions, rows [][]ledger.OutcomeRow) (*pairing, error) {
	if len(opts.Runs) < 2 || len(rows) != len(opts.Runs) {
		return nil, fmt.Errorf("compare: need at least two runs with their outcomes, got %d runs and %d outcome lists", len(opts.Runs), len(rows))
	}
	if opts.Alpha == 0 {
		opts.Alpha = stats.DefaultAlpha
	}
	if opts.B == 0 {
		opts.B = stats.DefaultResamples
	}
	if opts.Power == 0 {
		opts.Power = 0.8
	}
	if opts.Baseline == "" {
		opts.Baseline = opts.Runs[0].Label
	}
	type graded struct {
		correct bool
		seq     int64
	}
	results := make([]map[string]graded, len(opts.Runs))
	base := -1
	for i, r := range opts.Runs {
		if r.Label == opts.Baseline {
			base = i
		}
		results[i] = map[string]graded{}
		for _, o := range rows[i] {
			if o.Sample == 0 {
				results[i][o.TaskID] = graded{o.Correct, o.Seq}
			}
		}
		if len(results[i]) == 0 {
			return nil, fmt.Errorf("compare: run %s (%s) has no graded outcomes. Try: rlgate log --run %s", r.Run, r.Label, r.Run)
		}
	}
	if base < 0 {
		return nil, fmt.Errorf("compare: baseline %q is not one of the labels given", opts.Baseline)
	}
	p := &pairing{opts: opts, tasks: sortedTasks(results[base]), base: base,
		correct: make([][]bool, len(opts.Runs)), seq: make([][]int64, len(opts.Runs))}
	for i, r := range opts.Runs {
		if err := sameTasks(results[base], results[i], opts.Runs[base], r); err != nil {
			return nil, err
		}
		p.correct[i], p.seq[i] = make([]bool, len(p.tasks)), make([]int64, len(p.tasks))
		for j, t := range p.tasks {
			p.correct[i][j], p.seq[i][j] = results[i][t].correct, results[i][t].seq
		}
	}
	return p, nil
}

// discordant lists the indexes of the tasks run i solved and the baseline
// did not (gained: Compare's b) and those the baseline solved and run i
// did not (lost: c).
func (p *pairing) discordant(i int) (gained, lost []int) {
	for j := range p.tasks {
		switch a, b := p.correct[i][j], p.correct[p.base][j]; {
		case a && !b:
			gained = append(gained, j)
		case b && !a:
			lost = append(lost, j)
		}
	}
	return gained, lost
}

// solved counts the tasks run i solved.
func (p *pairing) solved(i int) int {
	n := 0
	for _, ok := range p.correct[i] {
		if ok {
			n++
		}
	}
	return n
}

// outcomeSeqs lists, sorted, the outcomes entries the pairing read.
func (p *pairing) outcomeSeqs() []int64 {
	set := map[int64]bool{}
	for _, seqs := range p.seq {
		for _, s := range seqs {
			set[s] = true
		}
	}
	out := make([]int64, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Record appends the comparison to the ledger and sets its Seq.
func (c *Comparison) Record(ctx context.Context, l *ledger.Ledger) error {
	return record(ctx, l, nil, []*Comparison{c})
}

func sortedTasks[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// maxListed caps how many differing task ids an error lists.
const maxListed = 10

// sameTasks refuses two runs whose task sets differ, listing the difference.
func sameTasks[V any](a, b map[string]V, ra, rb LabeledRun) error {
	var onlyA, onlyB []string
	for t := range a {
		if _, ok := b[t]; !ok {
			onlyA = append(onlyA, t)
		}
	}
	for t := range b {
		if _, ok := a[t]; !ok {
			onlyB = append(onlyB, t)
		}
	}
	if len(onlyA) == 0 && len(onlyB) == 0 {
		return nil
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	list := func(ts []string) string {
		if len(ts) > maxListed {
			return strings.Join(ts[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(ts)-maxListed)
		}
		return strings.Join(ts, ", ")
	}
	msg := fmt.Sprintf("compare: runs %s (%s) and %s (%s) were evaluated on different tasks, so they cannot be paired", ra.Label, ra.Run, rb.Label, rb.Run)
	if len(onlyA) > 0 {
		msg += fmt.Sprintf("; only in %s: %d (%s)", ra.Label, len(onlyA), list(onlyA))
	}
	if len(onlyB) > 0 {
		msg += fmt.Sprintf("; only in %s: %d (%s)", rb.Label, len(onlyB), list(onlyB))
	}
	return fmt.Errorf("%s. Try: evaluate both on the same tasks file", msg)
}
