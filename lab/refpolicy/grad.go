package refpolicy

import (
	"math"
	"strings"
)

// The functions below are the model's calculus for training: every slot
// is a softmax (temperature 1) over its candidates' scores, a choice's
// log-probability the sum over slots, and gradients are added to a
// Weights of the same shape.

// dist is slot s's distribution given the table.
func (pol *Model) dist(sk *sketch, s Slot, table int) []float64 {
	return softmax(pol.scores(sk, s, table), 1)
}

// addExpected adds coef·(Σ_i target_i φ_i − Σ_i p_i φ_i) to g's slot s.
func addGrad(g *Weights, s Slot, cs []cand, target, p []float64, coef float64) {
	if g == nil || coef == 0 {
		return
	}
	for i, c := range cs {
		d := float32(coef * (target[i] - p[i]))
		if d == 0 {
			continue
		}
		for _, f := range c.feats {
			g[s][f] += d
		}
	}
}

// LogProb returns log π(c) in sit (over the slots c's SQL shows) and, when g is not nil, adds coef·∇ log π(c).
func (pol *Model) LogProb(sit *Situation, c Choice, g *Weights, coef float64) float64 {
	var lp float64
	u := sit.sk.used(c)
	for s := range numSlots {
		if !u[s] {
			continue
		}
		cs := sit.sk.candidates(s, c[SlotTable])
		p := pol.dist(sit.sk, s, c[SlotTable])
		lp += math.Log(max(p[c[s]], 1e-300))
		target := make([]float64, len(p))
		target[c[s]] = 1
		addGrad(g, s, cs, target, p, coef)
	}
	return lp
}

// Targets is, per slot, the candidates a supervised example accepts.
type Targets [numSlots][]int

// MarginalLogProb returns Σ_slots log Σ_{i∈t[s]} π_s(i), the table's
// slots taken under table t[SlotTable][0], and adds coef·∇ to g.
func (pol *Model) MarginalLogProb(sit *Situation, t Targets, g *Weights, coef float64) float64 {
	table := t[SlotTable][0]
	var lp float64
	for s := range numSlots {
		cs := sit.sk.candidates(s, table)
		p := pol.dist(sit.sk, s, table)
		var mass float64
		for _, i := range t[s] {
			mass += p[i]
		}
		lp += math.Log(max(mass, 1e-300))
		target := make([]float64, len(p))
		for _, i := range t[s] {
			target[i] = p[i] / max(mass, 1e-300)
		}
		addGrad(g, s, cs, target, p, coef)
	}
	return lp
}

// KL returns Σ over the slots of c of KL(π‖ref) (the table's slots under
// c's table) and adds coef·∇ KL to g.
func (pol *Model) KL(ref *Model, sit *Situation, c Choice, g *Weights, coef float64) float64 {
	var kl float64
	u := sit.sk.used(c)
	for s := range numSlots {
		if !u[s] {
			continue
		}
		cs := sit.sk.candidates(s, c[SlotTable])
		p := pol.dist(sit.sk, s, c[SlotTable])
		q := ref.dist(sit.sk, s, c[SlotTable])
		var k float64
		lr := make([]float64, len(p))
		for i := range p {
			lr[i] = math.Log(max(p[i], 1e-300)) - math.Log(max(q[i], 1e-300))
			k += p[i] * lr[i]
		}
		kl += k
		if g != nil && coef != 0 {
			// ∂KL/∂z_i = p_i (log p_i − log q_i − KL): written as
			// target − p with target_i = p_i (1 + lr_i − KL).
			target := make([]float64, len(p))
			for i := range p {
				target[i] = p[i] * (1 + lr[i] - k)
			}
			addGrad(g, s, cs, target, p, coef)
		}
	}
	return kl
}

// Shown is the number of slots c's SQL shows.
func (sit *Situation) Shown(c Choice) int {
	n := 0
	for _, u := range sit.sk.used(c) {
		if u {
			n++
		}
	}
	return n
}

// Entropy returns Σ over the slots of c of the slot distribution's entropy.
func (pol *Model) Entropy(sit *Situation, c Choice) float64 {
	var h float64
	u := sit.sk.used(c)
	for s := range numSlots {
		if !u[s] {
			continue
		}
		for _, x := range pol.dist(sit.sk, s, c[SlotTable]) {
			if x > 0 {
				h -= x * math.Log(x)
			}
		}
	}
	return h
}

// NormalizeSQL folds white space and a trailing semicolon, so a query
// compares equal to the policy's rendering of it.
func NormalizeSQL(q string) string {
	return strings.TrimSuffix(strings.Join(strings.Fields(strings.TrimSpace(q)), " "), ";")
}

// maxMatches bounds the choices Match tries per table.
const maxMatches = 4096

// Match returns the targets of every choice whose SQL equals q
// (normalised), and false when no choice renders q.
func (sit *Situation) Match(q string) (Targets, bool) {
	q = NormalizeSQL(q)
	sk := sit.sk
	var t Targets
	found := false
	for ti, name := range sk.names {
		if !strings.Contains(q, " FROM "+quoteIdent(name)) {
			continue
		}
		var sets [numSlots][]int
		sets[SlotTable] = []int{ti}
		n := 1
		for s := SlotSelect; s < numSlots; s++ {
			for i, c := range sk.slots[ti][s] {
				if fragmentIn(q, s, c) {
					sets[s] = append(sets[s], i)
				}
			}
			n *= len(sets[s])
		}
		if n == 0 || n > maxMatches {
			continue
		}
		var c Choice
		c[SlotTable] = ti
		var walk func(s Slot)
		walk = func(s Slot) {
			if s == numSlots {
				if sk.render(c) == q {
					found = true
					for sl := range numSlots {
						if !contains(t[sl], c[sl]) {
							t[sl] = append(t[sl], c[sl])
						}
					}
				}
				return
			}
			for _, i := range sets[s] {
				c[s] = i
				walk(s + 1)
			}
		}
		walk(SlotSelect)
		if found {
			break // the table's slots are taken under one table
		}
	}
	return t, found
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// fragmentIn reports whether candidate c of slot s could have rendered
// its part of q.
func fragmentIn(q string, s Slot, c cand) bool {
	kw := map[Slot]string{SlotWhere: " WHERE ", SlotGroup: " GROUP BY ", SlotOrder: " ORDER BY ", SlotLimit: " LIMIT "}[s]
	if c.none {
		return s == SlotSelect2 || !strings.Contains(q, kw)
	}
	switch s {
	case SlotSelect:
		return strings.Contains(q, expr(c.agg, c.col))
	case SlotSelect2, SlotGroup:
		return strings.Contains(q, quoteIdent(c.col))
	}
	return strings.Contains(q, kw+describeSQL(s, c))
}

// describeSQL is the SQL a where, order or limit candidate renders after
// its keyword.
func describeSQL(s Slot, c cand) string {
	switch s {
	case SlotWhere:
		return quoteIdent(c.col) + " " + c.op + " " + c.val
	case SlotOrder:
		return expr(c.agg, c.col) + " " + dirName(c.desc)
	}
	return describeCand(s, c)
}
