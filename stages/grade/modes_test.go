package grade

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// TestMajorityVote: the largest group of equal result sets wins; a tie
// goes to the group whose first member came earliest (the seeds'
// evaluators); a failed query ("" here: the zero key) does not vote, and
// with no vote the task stands on sample 0.
func TestMajorityVote(t *testing.T) {
	for _, tc := range []struct {
		name   string
		keys   string // one result per sample; '-' a failed query
		chosen int
		votes  int
	}{
		{"single sample", "a", 0, 1},
		{"clear majority", "abbcb", 1, 3},
		{"tie goes to earliest first member", "xyyx", 0, 2},
		{"tie decided by first member, not last", "yxxyz", 0, 2},
		{"all different", "pqr", 0, 1},
		{"later group overtakes", "abb", 1, 2},
		{"failed queries do not vote", "--aab-", 2, 2},
		{"none ran: sample 0", "---", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := make([]SampleGrade, len(tc.keys))
			for i, k := range tc.keys {
				s[i].Outcome.Correct = i == tc.chosen
				if k != '-' {
					s[i].Result = ledger.Sum([]byte{byte(k)})
				}
			}
			d, err := majorityVote(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Decision{Chosen: tc.chosen, Correct: true, Votes: tc.votes}, d); diff != "" {
				t.Errorf("vote over %q (-want +got):\n%s", tc.keys, diff)
			}
		})
	}
}

// TestCheckMode: what each mode needs of n samples per task and k.
func TestCheckMode(t *testing.T) {
	for _, tc := range []struct {
		mode string
		n, k int
		ok   bool
	}{
		{ModeGreedy, 1, 0, true},
		{ModeMajority, 1, 0, false},
		{ModeMajority, 2, 0, true},
		{ModePassK, 4, 0, false},
		{ModePassK, 4, 1, true},
		{ModePassK, 4, 4, true},
		{ModePassK, 4, 5, false},
		{"best", 4, 1, false},
	} {
		err := CheckMode(tc.mode, tc.n, tc.k)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrMode) {
			t.Errorf("CheckMode(%s, n=%d, k=%d) = %v, want ok %v", tc.mode, tc.n, tc.k, err, tc.ok)
		}
	}
}

// TestPassKDecision: a task is correct when any sample is, and carries
// the unbiased pass@k of its counts: n = 4 samples, c = 2 correct, k = 2
// gives 1 - C(2,2)/C(4,2) = 1 - 1/6 (by hand).
func TestPassKDecision(t *testing.T) {
	s := []SampleGrade{{}, {Outcome: Judgement{Correct: true}}, {}, {Outcome: Judgement{Correct: true}}}
	d, err := modeDecide(ModePassK, 2)(s)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Correct || d.PassAtK == nil || math.Abs(*d.PassAtK-5.0/6) > 1e-12 {
		t.Errorf("decision %+v (pass@k %v), want correct with pass@2 = 5/6", d, *d.PassAtK)
	}
}
