package grade

import (
	"fmt"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stats"
)

// The evaluation modes: how a task's samples come to one outcome.
const (
	ModeGreedy   = "greedy"   // sample 0
	ModeMajority = "majority" // the largest group of equal result sets
	ModePassK    = "passk"    // correct when any sample is; unbiased pass@k
)

// CheckMode refuses a mode that cannot reduce n samples per task: an
// unknown name, majority over fewer than 2 samples, pass@k with k outside
// [1, n]. An evaluation checks it before it plays anything.
func CheckMode(mode string, n, k int) error {
	switch mode {
	case ModeGreedy:
	case ModeMajority:
		if n < 2 {
			return fmt.Errorf("%w: majority votes over samples: n = %d, want 2 or more", ErrMode, n)
		}
	case ModePassK:
		if k < 1 || k > n {
			return fmt.Errorf("%w: pass@k needs 1 <= k <= n = %d, k = %d", ErrMode, n, k)
		}
	default:
		return fmt.Errorf("%w: %q: want %s, %s or %s", ErrMode, mode, ModeGreedy, ModeMajority, ModePassK)
	}
	return nil
}

// modeDecide reduces a task's samples to its outcome under mode (checked
// by CheckMode): greedy stands on sample 0; majority on the largest group
// of samples whose final SQL ran to equal result sets (majorityVote);
// passk counts the task correct when any sample is, with the unbiased
// estimate stats.PassAtK.
func modeDecide(mode string, k int) Decide {
	switch mode {
	case ModeMajority:
		return majorityVote
	case ModePassK:
		return func(s []SampleGrade) (Decision, error) {
			c := 0
			for _, sg := range s {
				if sg.Outcome.Correct {
					c++
				}
			}
			p, err := stats.PassAtK(len(s), c, k)
			return Decision{Correct: c > 0, PassAtK: &p}, err
		}
	}
	return func(s []SampleGrade) (Decision, error) {
		return Decision{Correct: s[0].Outcome.Correct}, nil
	}
}

// majorityVote groups the samples whose final SQL ran by result set
// (ResultKey) and keeps the largest group; a tie goes to the group whose
// first member came earliest, as in the seeds' evaluators, so the outcome
// does not depend on map order. A failed query does not vote; when none
// ran, the task stands on sample 0.
func majorityVote(s []SampleGrade) (Decision, error) {
	group := map[ledger.Digest]int{} // result → group, in order of first member
	var first, size []int
	for i, sg := range s {
		if sg.Result.IsZero() {
			continue
		}
		g, ok := group[sg.Result]
		if !ok {
			g = len(size)
			group[sg.Result] = g
			first = append(first, i)
			size = append(size, 0)
		}
		size[g]++
	}
	if len(size) == 0 {
		return Decision{Correct: s[0].Outcome.Correct}, nil
	}
	best := 0
	for g := range size {
		if size[g] > size[best] {
			best = g
		}
	}
	chosen := first[best]
	return Decision{Chosen: chosen, Correct: s[chosen].Outcome.Correct, Votes: size[best]}, nil
}
