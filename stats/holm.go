package stats

import (
	"cmp"
	"fmt"
	"slices"
)

// HolmResult holds Holm's step-down adjustment of a family of p-values,
// index for index with the input.
type HolmResult struct {
	// Adjusted are the Holm-adjusted p-values: monotone in the raw p-values,
	// never below them, capped at 1.
	Adjusted []float64 `json:"adjusted"`
	// Reject reports, per hypothesis, whether it is rejected at family-wise
	// level alpha.
	Reject []bool `json:"reject"`
}

// Holm adjusts p-values for testing several claims at once (rl > base,
// rl > noupdate, ...) so that the chance of any false claim stays at most
// alpha, as statsmodels' multipletests(method="holm"): with the p-values
// sorted ascending, the i-th (from 0) is scaled by m−i, a running maximum
// keeps the result monotone, and values above 1 become 1. Rejection steps
// down while p(i) ≤ alpha/(m−i), compared as statsmodels compares it.
func Holm(p []float64, alpha float64) (HolmResult, error) {
	if len(p) == 0 {
		return HolmResult{}, fmt.Errorf("holm: %w", ErrEmpty)
	}
	if err := checkAlpha(alpha); err != nil {
		return HolmResult{}, fmt.Errorf("holm: %w", err)
	}
	for i, v := range p {
		if !(v >= 0 && v <= 1) {
			return HolmResult{}, fmt.Errorf("holm: p[%d]=%v: %w", i, v, ErrProbability)
		}
	}
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p[a], p[b]) })

	r := HolmResult{Adjusted: make([]float64, len(p)), Reject: make([]bool, len(p))}
	running, rejecting := 0.0, true
	for rank, i := range order {
		factor := float64(len(p) - rank)
		rejecting = rejecting && p[i] <= alpha/factor
		r.Reject[i] = rejecting
		running = max(running, p[i]*factor)
		r.Adjusted[i] = min(running, 1)
	}
	return r, nil
}
