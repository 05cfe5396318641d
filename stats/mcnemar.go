package stats

import (
	"fmt"
	"math"
)

// McNemarResult holds McNemar's test on the discordant counts of a paired
// 2×2 table, in the four forms statsmodels and the literature report.
type McNemarResult struct {
	// B and C are the discordant counts: pairs where only the first system
	// was right, and pairs where only the second was.
	B int `json:"b"`
	C int `json:"c"`
	// ExactP is the two-sided exact binomial p-value,
	// min(1, 2·P(X ≤ min(B, C))) for X ~ Binomial(B+C, 1/2); 1 when B+C = 0.
	ExactP float64 `json:"exact_p"`
	// MidP is the mid-p variant, ExactP less P(X = min(B, C)), capped at 1,
	// which is less conservative than ExactP.
	MidP float64 `json:"mid_p"`
	// ChiSq is (B−C)²/(B+C) and ChiSqP its upper tail on one degree of
	// freedom. Both are undefined when B+C = 0.
	ChiSq  Value `json:"chi2,omitzero"`
	ChiSqP Value `json:"chi2_p,omitzero"`
	// ChiSqCC is Edwards' continuity-corrected (|B−C|−1)²/(B+C), as
	// statsmodels computes it (the correction is not clamped at |B−C| = 0),
	// and ChiSqCCP its p-value. Both are undefined when B+C = 0.
	ChiSqCC  Value `json:"chi2_cc,omitzero"`
	ChiSqCCP Value `json:"chi2_cc_p,omitzero"`
}

// McNemar tests whether two systems evaluated on the same tasks differ, from
// b tasks only the first solved and c tasks only the second solved.
// Concordant tasks carry no information about the difference and are not
// needed. Values match statsmodels' mcnemar(exact=True) and
// mcnemar(exact=False, correction=True/False).
func McNemar(b, c int) (McNemarResult, error) {
	if b < 0 || c < 0 {
		return McNemarResult{}, fmt.Errorf("mcnemar b=%d c=%d: %w", b, c, ErrCount)
	}
	m := b + c
	tail, pmf := binomLowerTail(min(b, c), m, 0.5)
	r := McNemarResult{
		B:      b,
		C:      c,
		ExactP: math.Min(1, 2*tail),
		MidP:   math.Min(1, 2*tail-pmf),
	}
	if m > 0 {
		diff := math.Abs(float64(b - c))
		chi := diff * diff / float64(m)
		chiCC := (diff - 1) * (diff - 1) / float64(m)
		r.ChiSq, r.ChiSqP = Defined(chi), Defined(chiSquare1SF(chi))
		r.ChiSqCC, r.ChiSqCCP = Defined(chiCC), Defined(chiSquare1SF(chiCC))
	}
	return r, nil
}

// chiSquare1SF returns P(χ²₁ > x), which for one degree of freedom is
// erfc(√(x/2)) and keeps full precision far into the tail.
func chiSquare1SF(x float64) float64 {
	return math.Erfc(math.Sqrt(x / 2))
}
