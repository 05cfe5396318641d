package synth

import (
	"slices"
	"strconv"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/tasks"
)

// Sample picks n of ts deterministically under seed and returns them in
// their file order; n <= 0 or n >= len(ts) keeps them all. Each task is
// ranked by the BLAKE3 of "rlgate.synth.sample/1", the seed and its id,
// and the n lowest ranks are kept: the choice depends only on the seed and
// the ids, never on a random generator's implementation, so any reader can
// redo it, and a task added to the file does not reshuffle the others.
//
// NB: the bytes hashed here decide which questions a synthesis uses;
// changing them changes every sample.
func Sample(ts []tasks.Task, n int, seed int64) []tasks.Task {
	if n <= 0 || n >= len(ts) {
		return slices.Clone(ts)
	}
	type ranked struct {
		key ledger.Digest
		i   int
	}
	rs := make([]ranked, len(ts))
	prefix := "rlgate.synth.sample/1\x00" + strconv.FormatInt(seed, 10) + "\x00"
	for i, t := range ts {
		rs[i] = ranked{ledger.Sum([]byte(prefix + t.ID)), i}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := slices.Compare(a.key[:], b.key[:]); c != 0 {
			return c
		}
		return a.i - b.i
	})
	keep := make([]int, n)
	for j := range n {
		keep[j] = rs[j].i
	}
	slices.Sort(keep)
	out := make([]tasks.Task, n)
	for j, i := range keep {
		out[j] = ts[i]
	}
	return out
}
