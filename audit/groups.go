package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
)

// Group is a set of official difficulty levels (grading.Difficulties)
// written as a claim names it: the levels joined by "+" in their official
// order, e.g. "hard+extra". A claim on a group is tested on the tasks
// whose gold the gradings recorded at one of its levels.
type Group string

// ParseGroup reads LEVEL+LEVEL..., each an official difficulty level
// (Spider's easy, medium, hard, extra; BIRD's simple, moderate,
// challenging) given once, and returns it in the official order, so
// "extra+hard" and "hard+extra" are one group.
func ParseGroup(s string) (Group, error) {
	seen := map[string]bool{}
	for _, part := range strings.Split(s, "+") {
		level := strings.TrimSpace(part)
		switch {
		case !slices.Contains(grading.Difficulties, level):
			return "", fmt.Errorf("unknown group %q: want difficulty levels joined by +, each one of %s", level, strings.Join(grading.Difficulties, ", "))
		case seen[level]:
			return "", fmt.Errorf("group %q names %s twice", s, level)
		}
		seen[level] = true
	}
	return Group(strings.Join(grading.DifficultyOrder(seen), "+")), nil
}

// Levels lists the group's difficulty levels.
func (g Group) Levels() []string { return strings.Split(string(g), "+") }

// TaskDetail is where a graded task sits, as its grading recorded it
// beside the outcome: its database and its gold's difficulty ("" when the
// gold gives none); and how it was graded: the grading verdict, whether
// the verdict is fragile, and how the graded episode stopped (empty for a
// grading of a predictions file, which has no episodes).
type TaskDetail struct {
	DBID       string             `json:"db_id"`
	Difficulty string             `json:"difficulty"`
	Verdict    grading.Verdict    `json:"verdict"`
	Fragile    bool               `json:"fragile"`
	StopReason rollout.StopReason `json:"stop_reason"`
}

// unfinished reports whether the graded episode was left unfinished.
func (d TaskDetail) unfinished() bool { return leftUnfinished(d.StopReason) }

// TaskDetails reads, from the outcomes entries rows came from (one run's),
// where each task of the greedy sample sits. The derived outcome rows keep
// only what every grader records; the difficulty is in the entries.
func TaskDetails(ctx context.Context, l *ledger.Ledger, rows []ledger.OutcomeRow) (map[string]TaskDetail, error) {
	seqs := map[int64]bool{}
	for _, o := range rows {
		seqs[o.Seq] = true
	}
	out := map[string]TaskDetail{}
	for _, seq := range slices.Sorted(maps.Keys(seqs)) {
		e, err := l.EntryBySeq(ctx, seq)
		if err != nil {
			return nil, err
		}
		var body struct {
			Items []struct {
				TaskID string `json:"task_id"`
				Sample int    `json:"sample"`
				TaskDetail
			} `json:"items"`
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			return nil, fmt.Errorf("read outcomes entry %d: %w", seq, err)
		}
		for _, it := range body.Items {
			if it.Sample == 0 {
				out[it.TaskID] = it.TaskDetail
			}
		}
	}
	return out, nil
}

// readDetails reads TaskDetails for each run's outcome rows (rows[i]
// those of one run), the runs at the same time: decoding the entries is
// most of what a comparison of large evaluations costs.
func readDetails(ctx context.Context, l *ledger.Ledger, rows [][]ledger.OutcomeRow) ([]map[string]TaskDetail, error) {
	out := make([]map[string]TaskDetail, len(rows))
	err := ledger.ForEach(ctx, len(rows), func(ctx context.Context, i int) error {
		var err error
		out[i], err = TaskDetails(ctx, l, rows[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// difficulties reads each task's difficulty as the gradings of runs
// recorded it (details[i] those of runs[i]), and counts the tasks at
// each level. A task two gradings put at different levels is refused:
// graded against different gold, a group would not hold the same tasks
// for both.
func difficulties(runs []LabeledRun, details []map[string]TaskDetail) (map[string]string, map[string]int, error) {
	out := map[string]string{}
	from := map[string]LabeledRun{}
	for i, r := range runs {
		ds := details[i]
		for _, task := range slices.Sorted(maps.Keys(ds)) {
			d := ds[task].Difficulty
			if prev, ok := out[task]; ok && prev != d {
				return nil, nil, fmt.Errorf("task %s is %q in the grading of %s (%s) and %q in that of %s (%s), so no group holds the same tasks for both. Try: grade both against the same gold", task, prev, from[task].Label, from[task].Run, d, r.Label, r.Run)
			}
			out[task], from[task] = d, r
		}
	}
	count := map[string]int{}
	for _, d := range out {
		if d != "" {
			count[d]++
		}
	}
	return out, count, nil
}

// restrict is rows without the outcomes of tasks at none of the levels in.
func restrict(rows [][]ledger.OutcomeRow, level map[string]string, in ...string) [][]ledger.OutcomeRow {
	sub := make([][]ledger.OutcomeRow, len(rows))
	for i := range rows {
		sub[i] = slices.DeleteFunc(slices.Clone(rows[i]), func(o ledger.OutcomeRow) bool { return !slices.Contains(in, level[o.TaskID]) })
	}
	return sub
}

// compareOn is Compare on the tasks of group g: every level of g must
// hold at least one task of the runs, or the claim would rest on fewer
// tasks than it names.
func compareOn(ctx context.Context, l *ledger.Ledger, opts CompareOptions, g Group) (*Comparison, error) {
	rows, err := outcomeRows(ctx, l, opts.Runs)
	if err != nil {
		return nil, err
	}
	details, err := readDetails(ctx, l, rows)
	if err != nil {
		return nil, err
	}
	level, count, err := difficulties(opts.Runs, details)
	if err != nil {
		return nil, err
	}
	for _, want := range g.Levels() {
		if count[want] > 0 {
			continue
		}
		recorded := "no difficulty"
		if len(count) > 0 {
			var have []string
			for _, d := range grading.DifficultyOrder(count) {
				have = append(have, fmt.Sprintf("%s %d", d, count[d]))
			}
			recorded = strings.Join(have, ", ")
		}
		return nil, fmt.Errorf("group %s: no task of the evaluations is %s (their gradings recorded %s). Try: claim on the levels the dataset has", g, want, recorded)
	}
	c, err := CompareOutcomes(opts, restrict(rows, level, g.Levels()...))
	if err != nil {
		return nil, err
	}
	c.Group = g
	return c, nil
}
