package synth

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
)

// TestReplyParsesBack: what an SFT export trains on is a reply the
// environment's own parser reads back to the turn.
func TestReplyParsesBack(t *testing.T) {
	for _, turn := range []Turn{
		{Think: "look at the table", SQL: "SELECT count(*) FROM singer"},
		{Think: "answer", Solution: "SELECT name FROM singer WHERE age < 30", IsFinal: true},
	} {
		got, err := sqlenv.ParseTurn(turn.Reply())
		if err != nil {
			t.Fatalf("%q: %v", turn.Reply(), err)
		}
		want := sqlenv.Turn{Think: turn.Think, Action: sqlenv.ActionSQL, Body: turn.SQL}
		if turn.IsFinal {
			want.Action, want.Body = sqlenv.ActionSolution, turn.Solution
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", turn.Reply(), diff)
		}
	}
}

// TestSample checks the question sample's properties: n tasks, in file
// order, the same for the same seed whatever the file order, another set
// for another seed, and stable for the tasks already chosen when a task
// that ranks lower is added.
func TestSample(t *testing.T) {
	var ts []tasks.Task
	for i := range 500 {
		ts = append(ts, tasks.Task{ID: fmt.Sprintf("spider-%d", i), Index: i})
	}
	ids := func(ts []tasks.Task) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.ID
		}
		return out
	}
	a := Sample(ts, 100, 42)
	if len(a) != 100 || !slices.IsSortedFunc(a, func(x, y tasks.Task) int { return x.Index - y.Index }) {
		t.Fatalf("%d tasks, in file order %v", len(a), slices.IsSortedFunc(a, func(x, y tasks.Task) int { return x.Index - y.Index }))
	}
	rev := slices.Clone(ts)
	slices.Reverse(rev)
	b := Sample(rev, 100, 42)
	slices.Reverse(b)
	if diff := cmp.Diff(ids(a), ids(b)); diff != "" {
		t.Errorf("the file order changed the sample (-forward +reversed):\n%s", diff)
	}
	if c := Sample(ts, 100, 7); slices.Equal(ids(a), ids(c)) {
		t.Error("seeds 42 and 7 sampled the same tasks")
	}
	if all := Sample(ts, 0, 42); len(all) != 500 {
		t.Errorf("n = 0 kept %d of 500", len(all))
	}
	// A task added to the file either enters the sample, pushing out the
	// last-ranked one, or leaves it as it was.
	more := append(slices.Clone(ts), tasks.Task{ID: "spider-new", Index: 500})
	d := ids(Sample(more, 100, 42))
	common := 0
	for _, id := range d {
		if slices.Contains(ids(a), id) {
			common++
		}
	}
	if common < 99 {
		t.Errorf("adding one task changed %d of 100 sampled tasks", 100-common)
	}
}
