package stats

import (
	"slices"
	"testing"
)

func TestMajorityVote(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    []string
		index   int
		members []int
	}{
		{"single sample", []string{"a"}, 0, []int{0}},
		{"clear majority", []string{"a", "b", "b", "c", "b"}, 1, []int{1, 2, 4}},
		{"tie goes to earliest first member", []string{"x", "y", "y", "x"}, 0, []int{0, 3}},
		{"tie decided by first member, not last", []string{"y", "x", "x", "y", "z"}, 0, []int{0, 3}},
		{"all different", []string{"p", "q", "r"}, 0, []int{0}},
		{"later group overtakes", []string{"a", "b", "b"}, 1, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := MajorityVote(tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			if v.Index != tc.index || !slices.Equal(v.Members, tc.members) {
				t.Errorf("got index %d members %v, want %d %v", v.Index, v.Members, tc.index, tc.members)
			}
		})
	}
}
