package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
)

// matrixTasks is the size of the matrix tests' benchmark.
const matrixTasks = 200

// matrixDB and the other functions below say where task i sits and how
// each evaluation fared on it.
func matrixDB(i int) string { return fmt.Sprintf("db-%d", i%3) }

var matrixRuns = []struct {
	label      string
	right      func(i int) bool
	fragile    func(i int) bool
	unfinished func(i int) bool
}{
	{LabelBase, func(i int) bool { return i%4 == 0 }, func(i int) bool { return false }, func(i int) bool { return false }},
	{LabelSFT, func(i int) bool { return i%4 != 3 && i%23 != 0 }, func(i int) bool { return false }, func(i int) bool { return i%23 == 0 }},
	{LabelRL, func(i int) bool { return i%5 != 1 }, func(i int) bool { return i%17 == 0 }, func(i int) bool { return false }},
}

// gradeMatrix records the outcomes of the evaluations of matrixRuns as
// the grading of a rollout writes them (grading.TrajectoryItem), in two
// entries each, and returns the labelled runs.
func gradeMatrix(t *testing.T, l *ledger.Ledger) []LabeledRun {
	t.Helper()
	var runs []LabeledRun
	for _, r := range matrixRuns {
		run := "ev-" + r.label
		var items []grading.TrajectoryItem
		for i := range matrixTasks {
			it := grading.TrajectoryItem{Item: grading.Item{Outcome: ledger.Outcome{TaskID: fmt.Sprintf("task-%04d", i), Correct: r.right(i)},
				DBID: matrixDB(i), Difficulty: hardFirst(i), Verdict: grading.VerdictWrong, Fragile: r.fragile(i)}, StopReason: rollout.StopSolution}
			if r.right(i) {
				it.Verdict = grading.VerdictCorrect
			}
			if r.unfinished(i) {
				it.Verdict, it.StopReason = grading.VerdictPredError, rollout.StopTransport
			}
			items = append(items, it)
		}
		for _, part := range [][]grading.TrajectoryItem{items[:matrixTasks/2], items[matrixTasks/2:]} {
			if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: run, Body: map[string]any{"items": part}}); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, LabeledRun{r.label, run})
	}
	return runs
}

// matrixTaskIDs lists the task ids of every page of the matrix o selects,
// pages of size limit.
func matrixTaskIDs(t *testing.T, l *ledger.Ledger, o MatrixOptions, limit int) ([]string, *Matrix) {
	t.Helper()
	var ids []string
	var first *Matrix
	for o.Offset, o.Limit = 0, limit; ; o.Offset += limit {
		m, err := TaskMatrix(ctx, l, o)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = m
		}
		for _, r := range m.Rows {
			ids = append(ids, r.TaskID)
		}
		if len(m.Rows) < limit {
			return ids, first
		}
	}
}

func TestTaskMatrixCountsAreCompares(t *testing.T) {
	l := ledgertest.New(t)
	runs := gradeMatrix(t, l)
	c, err := Compare(ctx, l, CompareOptions{Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	m, err := TaskMatrix(ctx, l, MatrixOptions{Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	var want []MatrixPair
	for _, p := range c.Pairs {
		want = append(want, MatrixPair{Label: p.Label, Baseline: p.Baseline, B: p.B, C: p.C})
	}
	if diff := cmp.Diff(want, m.Pairs); diff != "" {
		t.Errorf("matrix pairs differ from compare's (-compare +matrix):\n%s", diff)
	}
	if m.Tasks != c.Tasks || m.Selected != c.Tasks || len(m.Rows) != DefaultMatrixPage {
		t.Errorf("tasks %d selected %d rows %d, compare paired %d", m.Tasks, m.Selected, len(m.Rows), c.Tasks)
	}
	// Each count is the number of tasks its filter lists.
	for _, p := range c.Pairs {
		for _, f := range []struct {
			filter MatrixFilter
			want   int
		}{{MatrixFilter{Gained: p.Label}, p.B}, {MatrixFilter{Lost: p.Label}, p.C}} {
			ids, _ := matrixTaskIDs(t, l, MatrixOptions{Runs: runs, Filter: f.filter}, 7)
			if len(ids) != f.want {
				t.Errorf("%+v lists %d tasks, compare counts %d", f.filter, len(ids), f.want)
			}
		}
	}
}

func TestTaskMatrixFilters(t *testing.T) {
	l := ledgertest.New(t)
	runs := gradeMatrix(t, l)
	base, sft, rl := matrixRuns[0], matrixRuns[1], matrixRuns[2]
	// want lists the task ids keep selects, in order.
	want := func(keep func(i int) bool) []string {
		var out []string
		for i := range matrixTasks {
			if keep(i) {
				out = append(out, fmt.Sprintf("task-%04d", i))
			}
		}
		return out
	}
	for _, c := range []struct {
		name   string
		filter MatrixFilter
		keep   func(i int) bool
	}{
		{"all", MatrixFilter{}, func(int) bool { return true }},
		{"solved only by rl", MatrixFilter{Gained: LabelRL}, func(i int) bool { return rl.right(i) && !base.right(i) }},
		{"lost by rl", MatrixFilter{Lost: LabelRL}, func(i int) bool { return base.right(i) && !rl.right(i) }},
		{"database", MatrixFilter{DBID: "db-1"}, func(i int) bool { return matrixDB(i) == "db-1" }},
		{"difficulty", MatrixFilter{Difficulty: "hard"}, func(i int) bool { return hardFirst(i) == "hard" }},
		{"fragile", MatrixFilter{Fragile: true}, rl.fragile},
		{"unfinished", MatrixFilter{Unfinished: true}, sft.unfinished},
		{"rl gains on one database", MatrixFilter{Gained: LabelRL, DBID: "db-2"}, func(i int) bool { return rl.right(i) && !base.right(i) && matrixDB(i) == "db-2" }},
		{"the baseline against itself", MatrixFilter{Gained: LabelBase}, func(int) bool { return false }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, m := matrixTaskIDs(t, l, MatrixOptions{Runs: runs, Filter: c.filter}, 9)
			if diff := cmp.Diff(want(c.keep), ids); diff != "" {
				t.Errorf("tasks listed (-want +got):\n%s", diff)
			}
			if m.Selected != len(ids) {
				t.Errorf("selected %d, listed %d", m.Selected, len(ids))
			}
			// The pairs count over the tasks of the database, level,
			// fragile and unfinished filters.
			where := c.filter
			where.Gained, where.Lost = "", ""
			for k, p := range m.Pairs {
				r := matrixRuns[k+1]
				b := want(func(i int) bool { return passes(where, i) && r.right(i) && !base.right(i) })
				if p.B != len(b) {
					t.Errorf("%s: b = %d, want %d", p.Label, p.B, len(b))
				}
			}
		})
	}
	m, err := TaskMatrix(ctx, l, MatrixOptions{Runs: runs, Filter: MatrixFilter{Fragile: true}})
	if err != nil {
		t.Fatal(err)
	}
	row := m.Rows[0]
	if row.TaskID != "task-0000" || row.DBID != "db-0" || row.Difficulty != "hard" || !row.Cells[2].Fragile || row.Cells[2].Seq == 0 ||
		row.Cells[1].Verdict != grading.VerdictPredError || !row.Cells[1].Unfinished() || row.Cells[0].Unfinished() {
		t.Errorf("first fragile row %+v", row)
	}
	if !cmp.Equal(m.Difficulties, []string{"easy", "medium", "hard"}) || !cmp.Equal(m.Databases, []string{"db-0", "db-1", "db-2"}) {
		t.Errorf("filter values %v %v", m.Difficulties, m.Databases)
	}
}

// passes reports whether task i passes the database, level, fragile and
// unfinished fields of f, as the matrix data says.
func passes(f MatrixFilter, i int) bool {
	return (f.DBID == "" || matrixDB(i) == f.DBID) && (f.Difficulty == "" || hardFirst(i) == f.Difficulty) &&
		(!f.Fragile || matrixRuns[2].fragile(i)) && (!f.Unfinished || matrixRuns[1].unfinished(i))
}

func TestTaskMatrixRefuses(t *testing.T) {
	l := ledgertest.New(t)
	runs := gradeMatrix(t, l)
	for _, c := range []struct {
		o    MatrixOptions
		want string
	}{
		{MatrixOptions{Runs: runs, Filter: MatrixFilter{Gained: "ppo"}}, `no evaluation is labelled "ppo"`},
		{MatrixOptions{Runs: runs, Limit: MaxMatrixPage + 1}, "want 1 to 500"},
		{MatrixOptions{Runs: runs, Offset: -1}, "offset -1"},
		{MatrixOptions{Runs: runs[:1]}, "need at least two runs"},
		{MatrixOptions{Runs: []LabeledRun{runs[0], {"rl", "missing"}}}, "has no graded outcomes"},
	} {
		if _, err := TaskMatrix(ctx, l, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
}
