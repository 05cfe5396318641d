package audit

import (
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// gradeLevels records one run's outcomes as a grader does, each item with
// its gold's difficulty: level(i) for task i, correct for right(i).
func gradeLevels(t *testing.T, l *ledger.Ledger, run string, n int, level func(i int) string, right func(i int) bool) {
	t.Helper()
	type item struct {
		ledger.Outcome
		Difficulty string `json:"difficulty,omitempty"`
	}
	var body struct {
		Items []item `json:"items"`
	}
	for i := range n {
		body.Items = append(body.Items, item{ledger.Outcome{TaskID: fmt.Sprintf("task-%04d", i), Correct: right(i)}, level(i)})
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: run, Body: body}); err != nil {
		t.Fatal(err)
	}
}

// hardFirst puts tasks 0-39 at hard, 40-99 at medium, the rest at easy.
func hardFirst(i int) string {
	switch {
	case i < 40:
		return "hard"
	case i < 100:
		return "medium"
	}
	return "easy"
}

// claimResults tests the claims of a policy (given as its claims: line)
// on the runs base=ev-base, rl=ev-rl of l.
func claimResults(t *testing.T, l *ledger.Ledger, claims string) []ClaimResult {
	t.Helper()
	p, err := ParsePolicy("p.yaml", []byte("claims: "+claims+"\naudits: [budget]\nruns: {base: ev-base, rl: ev-rl}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := testClaims(ctx, l, p)
	if err != nil {
		t.Fatal(err)
	}
	v := &Verdict{}
	if err := v.claims(p, tests); err != nil {
		t.Fatal(err)
	}
	return v.Claims
}

// TestClaimOnGroup: a claim on a group is tested on that group's tasks
// only, so it can pass where the claim over every task fails; the group is
// named in the result and its check.
func TestClaimOnGroup(t *testing.T) {
	l := ledgertest.New(t)
	// base solves no hard task and every other one; rl solves every hard
	// task and loses 40 of the others: no gain overall, all of it on hard.
	gradeLevels(t, l, "ev-base", 200, hardFirst, func(i int) bool { return i >= 40 })
	gradeLevels(t, l, "ev-rl", 200, hardFirst, func(i int) bool { return i < 40 || i >= 80 })
	got := claimResults(t, l, `["rl > base", "rl > base on hard", "rl > base on medium+hard"]`)
	type summary struct {
		Claim       string
		Group       Group
		OK          bool
		Tasks, B, C int
	}
	var sums []summary
	for _, c := range got {
		sums = append(sums, summary{c.Claim, c.Group, c.OK, c.Tasks, c.B, c.C})
	}
	want := []summary{
		{"rl > base", "", false, 200, 40, 40},
		{"rl > base on hard", "hard", true, 40, 40, 0},
		{"rl > base on medium+hard", "medium+hard", false, 100, 40, 40},
	}
	if diff := cmp.Diff(want, sums); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	// Holm runs across all three claims, the claims on groups included.
	if p := got[1].HolmP; p <= got[1].ExactP || p != min(1, 3*got[1].ExactP) {
		t.Errorf("Holm p %v of the smallest of three exact p %v: want 3×", p, got[1].ExactP)
	}
}

// TestClaimOnGroupRefused: a group no task of the evaluations is in, and
// gradings that put a task at different levels, fail the claim with a
// finding naming the group or the task; an unknown level is refused with
// the policy.
func TestClaimOnGroupRefused(t *testing.T) {
	l := ledgertest.New(t)
	gradeLevels(t, l, "ev-base", 100, hardFirst, func(i int) bool { return i%2 == 0 })
	gradeLevels(t, l, "ev-rl", 100, func(i int) string {
		if i == 7 {
			return "easy"
		}
		return hardFirst(i)
	}, func(i int) bool { return true })
	got := claimResults(t, l, `["rl > base on extra+hard"]`)
	if len(got) != 1 || got[0].OK || len(got[0].Problems) != 1 ||
		!strings.HasPrefix(got[0].Problems[0], `task task-0007 is "hard" in the grading of base (ev-base) and "easy" in that of rl (ev-rl)`) {
		t.Errorf("levels that differ: %+v", got)
	}

	l = ledgertest.New(t)
	gradeLevels(t, l, "ev-base", 100, hardFirst, func(i int) bool { return i%2 == 0 })
	gradeLevels(t, l, "ev-rl", 100, hardFirst, func(i int) bool { return true })
	got = claimResults(t, l, `["rl > base on extra+hard"]`)
	want := "group hard+extra: no task of the evaluations is extra (their gradings recorded medium 60, hard 40). Try: claim on the levels the dataset has"
	if len(got) != 1 || got[0].OK || got[0].Group != "hard+extra" || !cmp.Equal(got[0].Problems, []string{want}) {
		t.Errorf("empty level: %+v\nwant the problem %s", got, want)
	}

	for text, want := range map[string]string{
		`["rl > base on hardest"]`:   `unknown group "hardest": want difficulty levels joined by +, each one of simple, moderate, challenging, easy, medium, hard, extra`,
		`["rl > base on hard+hard"]`: `group "hard+hard" names hard twice`,
		`["rl > base on"]`:           `want LABEL > LABEL, two different plain labels, e.g. rl > base, or LABEL > LABEL on LEVEL+LEVEL`,
		`["rl > base hard"]`:         `want LABEL > LABEL`,
		`["rl > base on hard", "rl > base on hard + extra", "rl>base on extra+hard"]`: "claims: rl > base on hard+extra given twice",
	} {
		_, err := ParsePolicy("p.yaml", []byte("claims: "+text+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "policy p.yaml:1: claims: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("claims %s: got %v, want one naming %s", text, err, want)
		}
	}
}
