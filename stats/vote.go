package stats

import "fmt"

// Vote is the outcome of a majority vote over samples.
type Vote struct {
	// Index is the sample that represents the winning group: its first
	// member in sample order.
	Index int `json:"index"`
	// Members are the indices of every sample in the winning group, in
	// sample order.
	Members []int `json:"members"`
}

// MajorityVote groups samples by their result keys (for Text-to-SQL, a
// digest of the execution result), given in sample order, and returns the
// largest group. A tie goes to the group whose first member came earliest,
// as in the seeds' evaluators, so the outcome does not depend on map order.
func MajorityVote[K comparable](keys []K) (Vote, error) {
	if len(keys) == 0 {
		return Vote{}, fmt.Errorf("majority vote: %w", ErrEmpty)
	}
	group := make(map[K]int) // key → group number, in order of first member
	var first, size []int
	for i, k := range keys {
		g, ok := group[k]
		if !ok {
			g = len(size)
			group[k] = g
			first = append(first, i)
			size = append(size, 0)
		}
		size[g]++
	}
	best := 0
	for g := range size {
		if size[g] > size[best] {
			best = g
		}
	}
	v := Vote{Index: first[best], Members: make([]int, 0, size[best])}
	for i, k := range keys {
		if group[k] == best {
			v.Members = append(v.Members, i)
		}
	}
	return v, nil
}
