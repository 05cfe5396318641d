package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/rollout"
)

// The checks of the budget audit.
const (
	CheckSameDataset  = "same-dataset"  // every evaluation read the same tasks and gold files
	CheckSameTaskSet  = "same-task-set" // ... ran the same task ids
	CheckSameProtocol = "same-protocol" // ... under the same protocol digest
	CheckSameGrading  = "same-grading"  // ... graded under the same metric and mode
	CheckSameEpisodes = "same-episodes" // ... graded every episode of their rollouts (none counted wrong unplayed)
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
// they share the dataset digests (tasks and gold, and the digest of every
// database and the SQLite version each grading recorded), the task set,
// the protocol digest (turn limit, token limits, sampling, SQL timeout and
// row caps) and the grading metric and mode, with every difference listed
// side by side; no grading ran on databases that differ from the import
// (--allow-db-mismatch) or counted unfinished episodes wrong
// (--allow-incomplete); and each rollout finished with every episode
// within its protocol's turn and SQL budgets, its unfinished episodes
// named when it did not.
func Budget(ctx context.Context, l *ledger.Ledger, s Subjects) (*Report, error) {
	return runBudget(ctx, l, s, nil)
}

func runBudget(ctx context.Context, l *ledger.Ledger, s Subjects, cache *scanCache) (*Report, error) {
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
	sameDatabases(r, evals)
	same(CheckSameTaskSet, "task set", func(e *evalRun) string { return e.rollout.TaskSet.String() })
	same(CheckSameGrading, "grading", func(e *evalRun) string { return fmt.Sprintf("%s %s k=%d", e.grade.Metric, e.grade.Mode, e.grade.K) })

	sameEpisodes(r, evals)

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
		if err := withinBudget(ctx, l, r, e, cache); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// withinBudget checks one rollout: it finished, every task has its samples,
// and no episode spent more turns or SQL executions than its protocol
// allows.
func withinBudget(ctx context.Context, l *ledger.Ledger, r *Report, e *evalRun, cache *scanCache) error {
	p := e.rollout.Protocol
	recs, err := cache.recorded(ctx, l, e.grade.Rollout)
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
	case e.rolloutRun.Status != records.StatusOK:
		return unfinished(ctx, l, r, e, len(recs), want, start)
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

// unfinished adds the within-budget finding of a rollout that did not end
// ok: how many of its want episodes are finished, and each (task, sample)
// left unfinished by a transport failure, with the entries recording
// them.
func unfinished(ctx context.Context, l *ledger.Ledger, r *Report, e *evalRun, finished, want int, seqs []int64) error {
	left, err := rollout.ReadUnfinished(ctx, l, e.grade.Rollout)
	if err != nil {
		return err
	}
	ev := make([]OverBudget, len(left))
	names := make([]string, len(left))
	for i, u := range left {
		ev[i] = OverBudget{Label: e.Label, TaskID: u.TaskID, Sample: u.Sample, Detail: "unfinished: " + string(u.StopReason), Seq: u.Seq}
		names[i] = rollout.EpisodeUser(u.TaskID, u.Sample)
		seqs = append(seqs, u.Seq)
	}
	msg := fmt.Sprintf("%s: rollout %s is %s, not finished: %d of %d episodes unfinished", e.Label, e.grade.Rollout, e.rolloutRun.Status, want-finished, want)
	if len(left) > 0 {
		const shown = 20
		msg += fmt.Sprintf("; %d ended on a transport failure: %s", len(left), strings.Join(names[:min(shown, len(names))], ", "))
		if len(names) > shown {
			msg += fmt.Sprintf(" and %d more", len(names)-shown)
		}
	}
	if n := want - finished - len(left); n > 0 {
		msg += fmt.Sprintf("; %d never played", n)
	}
	r.fail(CheckWithinBudget, ev, seqs, "%s", msg)
	return nil
}

// sameDatabases adds the same-dataset findings of the databases the
// gradings recorded (database_check): every database's digest and the
// SQLite version must agree across the evaluations, with each difference
// side by side, and no grading may have run on databases that differ from
// the import (--allow-db-mismatch). A different SQLite version fails, not
// only notes: the same SQL can get another verdict under another SQLite
// (3.43 changed how SUM and AVG round), so the paired comparison would
// credit the model with what the grader changed.
func sameDatabases(r *Report, evals []*evalRun) {
	seqs := make([]int64, len(evals))
	flat := make([]map[string]string, len(evals))
	recorded := 0
	for i, e := range evals {
		seqs[i] = e.gradeRun.StartedSeq
		flat[i] = map[string]string{}
		c := e.grade.Databases
		if c == nil {
			flat[i]["database digests"] = "(not recorded)"
			continue
		}
		recorded++
		for id, d := range c.Digests {
			flat[i]["database "+id] = d.String()
		}
		flat[i]["sqlite version"] = cmp.Or(c.SQLiteVersion, "(not recorded)")
	}
	if diffs := fieldDifferences(evals, flat); len(diffs) > 0 {
		fields := make([]string, len(diffs))
		for i, d := range diffs {
			fields[i] = d.Field + " (" + sideBySide(evals, d) + ")"
		}
		r.fail(CheckSameDataset, diffs, seqs, "the gradings ran on different databases or SQLite versions; %d fields differ: %s. Try: grade every rollout on the databases the import recorded, with one rlgate build",
			len(diffs), strings.Join(fields, "; "))
	} else if recorded == 0 {
		r.pass(CheckSameDataset, nil, seqs, "no grading recorded the databases it ran on (database_check); their digests cannot be compared")
	} else {
		c := evals[0].grade.Databases
		r.pass(CheckSameDataset, nil, seqs, "all %d gradings ran on the same %d databases with SQLite %s", len(evals), len(c.Digests), c.SQLiteVersion)
	}
	for _, e := range evals {
		c := e.grade.Databases
		if c == nil || len(c.Mismatches) == 0 {
			continue
		}
		parts := make([]string, len(c.Mismatches))
		for i, m := range c.Mismatches {
			parts[i] = fmt.Sprintf("%s (%s: %s, the import recorded %s)", m.DBID, m.Path, m.Actual, m.Recorded)
		}
		r.fail(CheckSameDataset, c.Mismatches, []int64{e.gradeRun.StartedSeq}, "%s: grading %s ran on %d databases that differ from the import (--allow-db-mismatch): %s",
			e.Label, e.Run, len(c.Mismatches), strings.Join(parts, "; "))
	}
}

// sameEpisodes adds the same-episodes finding: a grading that counted
// unfinished episodes of an incomplete rollout wrong (eval
// --allow-incomplete) did not grade the episodes the others did.
func sameEpisodes(r *Report, evals []*evalRun) {
	var parts []string
	var seqs []int64
	for _, e := range evals {
		if e.grade.AllowIncomplete && e.grade.Unfinished > 0 {
			parts = append(parts, fmt.Sprintf("%s: grading %s counted %d of %d episodes wrong without a finished episode to grade (rollout %s was incomplete; eval --allow-incomplete)",
				e.Label, e.Run, e.grade.Unfinished, e.rollout.Count*e.rollout.Protocol.Sampling.N, e.grade.Rollout))
			seqs = append(seqs, e.gradeRun.StartedSeq)
		}
	}
	if len(parts) > 0 {
		r.fail(CheckSameEpisodes, nil, seqs, "the compared evaluations did not get the same episodes: %s. Try: finish the rollout (run the same command again) and grade it anew", strings.Join(parts, "; "))
		return
	}
	all := make([]int64, len(evals))
	for i, e := range evals {
		all[i] = e.gradeRun.StartedSeq
	}
	r.pass(CheckSameEpisodes, nil, all, "all %d gradings graded a finished episode of every (task, sample)", len(evals))
}

// protocolDifferences lists the protocol fields (as dotted JSON paths)
// whose values differ between the evaluations, in path order.
func protocolDifferences(evals []*evalRun) ([]Difference, error) {
	flat := make([]map[string]string, len(evals))
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
	}
	return fieldDifferences(evals, flat), nil
}

// fieldDifferences lists the fields whose values (flat[i] for evals[i],
// "(absent)" where one has none) differ between the evaluations, in field
// order.
func fieldDifferences(evals []*evalRun, flat []map[string]string) []Difference {
	paths := map[string]bool{}
	for _, f := range flat {
		for k := range f {
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
	return out
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
