package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
)

// The checks of the budget audit.
const (
	CheckSameDataset  = "same-dataset"  // every evaluation read the same tasks and gold files
	CheckSameTaskSet  = "same-task-set" // ... ran the same task ids
	CheckSameProtocol = "same-protocol" // ... under the same protocol digest
	CheckSameGrading  = "same-grading"  // ... graded under the same metric and mode
	CheckWithinBudget = "within-budget" // every episode kept to the protocol's turns and SQL budget, and the rollout finished
)

// Difference is one field on which compared evaluations disagree, with
// each evaluation's value by label, side by side.
type Difference struct {
	Field  string            `json:"field"`
	Values map[string]string `json:"values"`
}

// OverBudget is an episode that spent more than its protocol allows.
type OverBudget struct {
	Label  string `json:"label"`
	TaskID string `json:"task_id"`
	Sample int    `json:"sample"`
	Detail string `json:"detail"`
	Seq    int64  `json:"seq"`
}

// Budget checks that the labelled evaluations were held to one budget:
// they share the dataset digests (tasks and gold), the task set, the
// protocol digest (turn limit, token limits, sampling, SQL timeout and row
// caps) and the grading metric and mode, with every difference listed side
// by side; and that each rollout finished with every episode within its
// protocol's turn and SQL budgets.
func Budget(ctx context.Context, l *ledger.Ledger, s Subjects) (*Report, error) {
	r := newReport(AuditBudget, s)
	evals, err := loadEvals(ctx, l, s.Runs)
	if err != nil {
		return nil, err
	}
	if len(evals) == 0 {
		return nil, fmt.Errorf("audit budget: name the evaluations to compare (runs)")
	}
	seqs := make([]int64, 0, 2*len(evals))
	for _, e := range evals {
		seqs = append(seqs, e.gradeRun.StartedSeq, e.rolloutRun.StartedSeq)
	}
	same := func(check, what string, value func(e *evalRun) string) {
		d := Difference{Field: what, Values: map[string]string{}}
		for _, e := range evals {
			d.Values[e.Label] = value(e)
		}
		if n := len(distinct(d.Values)); n > 1 {
			r.fail(check, []Difference{d}, seqs, "the evaluations differ in %s: %s", what, sideBySide(evals, d))
			return
		}
		r.pass(check, nil, seqs, "all %d evaluations share %s %s", len(evals), what, d.Values[evals[0].Label])
	}
	same(CheckSameDataset, "tasks digest", func(e *evalRun) string { return e.rollout.TasksDigest.String() })
	same(CheckSameDataset, "gold digest", func(e *evalRun) string { return e.grade.GoldDigest.String() })
	same(CheckSameTaskSet, "task set", func(e *evalRun) string { return e.rollout.TaskSet.String() })
	same(CheckSameGrading, "grading", func(e *evalRun) string { return fmt.Sprintf("%s %s k=%d", e.grade.Metric, e.grade.Mode, e.grade.K) })

	// The protocol: one digest, and when they differ, every field that does.
	diffs, err := protocolDifferences(evals)
	if err != nil {
		return nil, err
	}
	if len(diffs) > 0 {
		fields := make([]string, len(diffs))
		for i, d := range diffs {
			fields[i] = d.Field + " (" + sideBySide(evals, d) + ")"
		}
		r.fail(CheckSameProtocol, diffs, seqs, "the evaluations ran under different protocols; %d fields differ: %s", len(diffs), strings.Join(fields, "; "))
	} else {
		r.pass(CheckSameProtocol, nil, seqs, "all %d evaluations share protocol %s", len(evals), evals[0].rollout.ProtocolDigest)
	}

	for _, e := range evals {
		if err := withinBudget(ctx, l, r, e); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// withinBudget checks one rollout: it finished, every task has its samples,
// and no episode spent more turns or SQL executions than its protocol
// allows.
func withinBudget(ctx context.Context, l *ledger.Ledger, r *Report, e *evalRun) error {
	p := e.rollout.Protocol
	recs, err := rollout.ReadRecorded(ctx, l, e.grade.Rollout)
	if err != nil {
		return err
	}
	var over []OverBudget
	var seqs []int64
	for _, rec := range recs {
		var why []string
		if rec.Turns > p.MaxTurns {
			why = append(why, fmt.Sprintf("%d turns of %d", rec.Turns, p.MaxTurns))
		}
		if rec.SQLExecutions > p.SQLBudget {
			why = append(why, fmt.Sprintf("%d SQL executions of %d", rec.SQLExecutions, p.SQLBudget))
		}
		if len(why) > 0 {
			over = append(over, OverBudget{Label: e.Label, TaskID: rec.TaskID, Sample: rec.Sample, Detail: strings.Join(why, ", "), Seq: rec.Seq})
			seqs = append(seqs, rec.Seq)
		}
	}
	want := e.rollout.Count * p.Sampling.N
	start := []int64{e.rolloutRun.StartedSeq}
	if e.rolloutRun.EndedSeq != nil {
		start = append(start, *e.rolloutRun.EndedSeq)
	}
	switch {
	case e.rolloutRun.Status != "ok":
		r.fail(CheckWithinBudget, nil, start, "%s: rollout %s is %s, not finished", e.Label, e.grade.Rollout, e.rolloutRun.Status)
	case len(recs) != want:
		r.fail(CheckWithinBudget, nil, start, "%s: rollout %s recorded %d of %d episodes (%d tasks × n=%d)", e.Label, e.grade.Rollout, len(recs), want, e.rollout.Count, p.Sampling.N)
	case len(over) > 0:
		r.fail(CheckWithinBudget, over, seqs, "%s: %d of %d episodes spent more than the protocol allows; first: %s#%d, %s",
			e.Label, len(over), len(recs), over[0].TaskID, over[0].Sample, over[0].Detail)
	default:
		r.pass(CheckWithinBudget, nil, start, "%s: all %d episodes of rollout %s within %d turns and %d SQL executions",
			e.Label, len(recs), e.grade.Rollout, p.MaxTurns, p.SQLBudget)
	}
	return nil
}

// protocolDifferences lists the protocol fields (as dotted JSON paths)
// whose values differ between the evaluations, in path order.
func protocolDifferences(evals []*evalRun) ([]Difference, error) {
	flat := make([]map[string]string, len(evals))
	paths := map[string]bool{}
	for i, e := range evals {
		raw, err := json.Marshal(e.rollout.Protocol)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		flat[i] = map[string]string{}
		flatten("", v, flat[i])
		for k := range flat[i] {
			paths[k] = true
		}
	}
	var out []Difference
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		d := Difference{Field: p, Values: map[string]string{}}
		for i, e := range evals {
			v, ok := flat[i][p]
			if !ok {
				v = "(absent)"
			}
			d.Values[e.Label] = v
		}
		if len(distinct(d.Values)) > 1 {
			out = append(out, d)
		}
	}
	return out, nil
}

// flatten writes every leaf of a decoded JSON value under its dotted path.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			flatten(join(prefix, k), c, out)
		}
	case []any:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func distinct(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, v := range m {
		out[v] = true
	}
	return out
}

// sideBySide prints a difference as "label value, label value" in the
// evaluations' order, long values shortened.
func sideBySide(evals []*evalRun, d Difference) string {
	parts := make([]string, 0, len(evals))
	for _, e := range evals {
		v := d.Values[e.Label]
		if len(v) > 60 {
			v = v[:57] + "..."
		}
		parts = append(parts, e.Label+" "+v)
	}
	return strings.Join(parts, ", ")
}
