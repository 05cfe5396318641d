package stats

import (
	"fmt"
	"sort"
)

// MinDetectableEffect returns the smallest accuracy difference |p10 − p01|
// that the exact McNemar test (two-sided, rejecting when p < alpha) detects
// with the given power on n paired tasks whose discordance rate, the share
// of tasks where exactly one system is right, is discordant/n. It answers
// "how large a gain could this evaluation have seen?", which a reader needs
// before taking a non-significant result as no gain.
//
// Power is computed exactly, not by a normal approximation and not
// conditional on the observed discordant count: the number of discordant
// tasks is m ~ Binomial(n, ψ) with ψ = discordant/n, and given m the count
// favouring one system is Binomial(m, (ψ+δ)/(2ψ)); power sums the
// probability of every (m, b) whose exact p-value is below alpha. Power
// grows with δ on [0, ψ], so δ is found by bisection to within 1e-9. The
// result is undefined when even δ = ψ (every discordant task favours one
// system) does not reach the power, which includes discordant = 0.
func MinDetectableEffect(n, discordant int, alpha, power float64) (Value, error) {
	switch {
	case n <= 0:
		return Value{}, fmt.Errorf("minimum detectable effect: n=%d tasks: %w", n, ErrEmpty)
	case discordant < 0 || discordant > n:
		return Value{}, fmt.Errorf("minimum detectable effect: %d discordant of n=%d: %w", discordant, n, ErrCount)
	case !(power > 0 && power < 1):
		return Value{}, fmt.Errorf("minimum detectable effect: power=%v: %w", power, ErrProbability)
	}
	if err := checkAlpha(alpha); err != nil {
		return Value{}, fmt.Errorf("minimum detectable effect: %w", err)
	}
	psi := float64(discordant) / float64(n)
	pw := mcnemarPower(n, psi, alpha)
	if pw(psi) < power {
		return Value{}, nil
	}
	lo, hi := 0.0, psi
	for hi-lo > 1e-9 {
		mid := (lo + hi) / 2
		if pw(mid) >= power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return Defined(hi), nil
}

// mcnemarPower returns the power of the exact McNemar test at level alpha
// on n tasks with discordance rate psi, as a function of the difference
// delta in [0, psi]. The rejection region of each discordant count m,
// min(b, m−b) ≤ k*(m), does not depend on delta and is found once.
func mcnemarPower(n int, psi, alpha float64) func(delta float64) float64 {
	mLo, weight := binomWindow(n, psi, nil)
	crit := make([]int, len(weight))
	for i := range weight {
		m := mLo + i
		// 2·P(X ≤ k) first reaches alpha at k ≤ m/2, where P(X ≤ k) ≥ 1/2.
		crit[i] = sort.Search(m/2+1, func(k int) bool {
			tail, _ := binomLowerTail(k, m, 0.5)
			return 2*tail >= alpha
		}) - 1
	}
	return func(delta float64) float64 {
		pi := (psi + delta) / (2 * psi)
		var power float64
		for i, w := range weight {
			if k := crit[i]; k >= 0 {
				m := mLo + i
				power += w * (binomCDF(k, m, pi) + binomCDF(k, m, 1-pi))
			}
		}
		return power
	}
}
