package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Wilson returns the Wilson score interval for k successes in n trials at
// level 1 − alpha, computed as statsmodels' proportion_confint(method=
// "wilson"). At k = 0 and k = n the bound that is exactly 0 or 1 in theory
// is returned as exactly 0 or 1, not as the rounding residue of the formula.
func Wilson(k, n int, alpha float64) (Interval, error) {
	if err := checkProportion(k, n, alpha); err != nil {
		return Interval{}, fmt.Errorf("wilson interval: %w", err)
	}
	nf := float64(n)
	q := float64(k) / nf
	crit := criticalZ(alpha)
	crit2 := crit * crit
	denom := 1 + crit2/nf
	center := (q + crit2/(2*nf)) / denom
	dist := crit * math.Sqrt(q*(1-q)/nf+crit2/(4*nf*nf)) / denom
	iv := Interval{Lo: center - dist, Hi: center + dist}
	if k == 0 {
		iv.Lo = 0
	}
	if k == n {
		iv.Hi = 1
	}
	return iv, nil
}

// ClopperPearson returns the exact (Clopper-Pearson) interval for k
// successes in n trials at level 1 − alpha, from beta quantiles as
// statsmodels' proportion_confint(method="beta"): Lo = B(alpha/2; k, n−k+1),
// Hi = B(1 − alpha/2; k+1, n−k), with Lo = 0 at k = 0 and Hi = 1 at k = n.
func ClopperPearson(k, n int, alpha float64) (Interval, error) {
	if err := checkProportion(k, n, alpha); err != nil {
		return Interval{}, fmt.Errorf("clopper-pearson interval: %w", err)
	}
	iv := Interval{Lo: 0, Hi: 1}
	if k > 0 {
		iv.Lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha / 2)
	}
	if k < n {
		iv.Hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha/2)
	}
	return iv, nil
}

// checkProportion validates k successes in n trials and a level alpha.
func checkProportion(k, n int, alpha float64) error {
	switch {
	case n <= 0:
		return fmt.Errorf("n=%d trials: %w", n, ErrEmpty)
	case k < 0 || k > n:
		return fmt.Errorf("k=%d successes in n=%d: %w", k, n, ErrCount)
	}
	return checkAlpha(alpha)
}

// checkAlpha validates a significance level, which must lie in (0, 1).
func checkAlpha(alpha float64) error {
	if !(alpha > 0 && alpha < 1) {
		return fmt.Errorf("alpha=%v: %w", alpha, ErrProbability)
	}
	return nil
}

// criticalZ returns the two-sided standard normal critical value z with
// P(|Z| > z) = alpha.
func criticalZ(alpha float64) float64 {
	return -distuv.UnitNormal.Quantile(alpha / 2)
}
