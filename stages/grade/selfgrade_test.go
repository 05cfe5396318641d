package grade

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/gold"
)

// TestSampleGoldKeepsItsOrder holds SampleGold to the definition the
// recorded verdicts were derived with: the golds whose "seed:id" BLAKE3,
// in hex, sorts lowest. A verdict re-derived with another sample would
// not reproduce.
func TestSampleGoldKeepsItsOrder(t *testing.T) {
	var golds []gold.Gold
	for i := range 1534 {
		golds = append(golds, gold.Gold{ID: fmt.Sprintf("bird-%04d", i), SQL: "SELECT 1"})
	}
	for _, seed := range []uint64{DefaultSelfGradeSeed, 1, 7} {
		want := slices.Clone(golds)
		slices.SortFunc(want, func(a, b gold.Gold) int {
			return strings.Compare(ledger.Sum(fmt.Appendf(nil, "%d:%s", seed, a.ID)).String(), ledger.Sum(fmt.Appendf(nil, "%d:%s", seed, b.ID)).String())
		})
		for _, n := range []int{1, 50, 1533} {
			if diff := cmp.Diff(want[:n], SampleGold(golds, n, seed)); diff != "" {
				t.Errorf("seed %d, n %d: (-hex order +SampleGold):\n%s", seed, n, diff)
			}
		}
	}
	if got := SampleGold(golds[:3], 5, 1); len(got) != 3 {
		t.Errorf("fewer golds than asked: got %d, want all 3", len(got))
	}
}
