package refpolicy

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// NumSlots is the number of slots, and of weight tensors.
const NumSlots = int(numSlots)

// basePriors are the Base checkpoint's weights on name-match and clause
// features. Greedily they answer "what are the names of all singers"
// (best-named table and column, no clause) and little more; sampled, they
// make the clauses that fit the question (count(*), an aggregate or an
// order on a named column, a probed value) likely enough to be explored.
// Every trigger word (how many, oldest, each, more than) is left to
// training.
var basePriors = map[Slot]map[string]float32{
	SlotTable: {"tbl:full": 2, "tbl:partial": 1, "tbl:colhits=1": 0.5, "tbl:colhits=2": 1, "tbl:colhits=3": 1.5, "tbl:valuehit": 1},
	SlotSelect: {"sel:agg=|col:full": 4, "sel:agg=|col:partial": 2, "sel:agg=": 0.5, "sel:star|agg=": -2, "sel:star|agg=count": 2.5,
		"sel:agg=max|col:full": 2, "sel:agg=min|col:full": 2, "sel:agg=avg|col:full": 2, "sel:agg=sum|col:full": 2},
	SlotSelect2: {"select2:none": 4, "select2|col:full": 2},
	SlotWhere: {"where:none": 4, "where:op==|value": 4.5, "where:value|col:partial": 0.5,
		"where:number|op==|col:full": 1.5, "where:number|op=>|col:full": 1.5, "where:number|op=<|col:full": 1.5},
	SlotGroup: {"group:none": 4, "group|col:full": 1.5},
	SlotOrder: {"order:none": 4, "order:DESC|col:full": 1.5, "order:ASC|col:full": 1.5, "order:count|DESC": 1},
	SlotLimit: {"limit:none": 4, "limit:one": 1.5, "limit:number": 2},
}

// Base returns the Base checkpoint's weights: basePriors plus Gaussian
// noise of standard deviation 0.01 from seed, which breaks ties.
func Base(seed uint64) *Weights {
	w := NewWeights()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	for s := range w {
		for i := range w[s] {
			w[s][i] = float32(0.01 * rng.NormFloat64())
		}
		priors := basePriors[Slot(s)]
		for _, name := range slices.Sorted(maps.Keys(priors)) { // a fixed order of float additions
			w[s][hashFeat(name)] += priors[name]
		}
	}
	return w
}
