package stats

import "math"

// The binomial helpers below serve McNemar's exact test, the power behind
// MinDetectableEffect and the 0/1 bootstrap. They work from one anchor term
// computed in log space and walk neighbouring terms by their ratio, which
// keeps tails as small as 1e-300 at full relative precision and costs a few
// multiplications per term instead of a log-gamma call.

// binomLogPMF returns log P(X = k) for X ~ Binomial(n, p), or -Inf outside
// the support.
func binomLogPMF(k, n int, p float64) float64 {
	switch {
	case k < 0 || k > n:
		return math.Inf(-1)
	case p == 0:
		if k == 0 {
			return 0
		}
		return math.Inf(-1)
	case p == 1:
		if k == n {
			return 0
		}
		return math.Inf(-1)
	}
	ln, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lnk, _ := math.Lgamma(float64(n - k + 1))
	return ln - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

// tailEps is the relative size below which a term no longer changes a sum.
const tailEps = 1e-17

// binomLowerTail returns P(X ≤ k) and P(X = k) for X ~ Binomial(n, p),
// 0 ≤ k ≤ n. It needs k at or below the mode, (n+1)p, where terms only
// shrink as the walk goes down, so the sum keeps the relative precision of
// its largest term, P(X = k).
func binomLowerTail(k, n int, p float64) (cdf, pmf float64) {
	pmf = math.Exp(binomLogPMF(k, n, p))
	r := (1 - p) / p
	cdf = pmf
	for i, t := k, pmf; i > 0 && t > cdf*tailEps; i-- {
		t *= float64(i) / float64(n-i+1) * r
		cdf += t
	}
	return cdf, pmf
}

// binomCDF returns P(X ≤ k) for X ~ Binomial(n, p) to absolute precision.
// Above the mode it sums the upper tail from its own largest term, as the
// lower tail of n − X ~ Binomial(n, 1 − p).
func binomCDF(k, n int, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n:
		return 1
	case float64(k) < float64(n+1)*p:
		cdf, _ := binomLowerTail(k, n, p)
		return cdf
	}
	upper, _ := binomLowerTail(n-k-1, n, 1-p)
	return 1 - upper
}

// binomWindow returns the probabilities of Binomial(n, p) on the window
// [lo, lo+len(pmf)) around the mode outside which every term is below
// tailEps times the largest; the mass left out is below 1e-15. It reuses
// buf's storage.
func binomWindow(n int, p float64, buf []float64) (lo int, pmf []float64) {
	mode := min(int(float64(n+1)*p), n)
	top := math.Exp(binomLogPMF(mode, n, p))
	cut := top * tailEps
	pmf = append(buf[:0], top)
	lo = mode
	for t := top; lo > 0; lo-- {
		t *= float64(lo) / float64(n-lo+1) * (1 - p) / p
		if t < cut {
			break
		}
		pmf = append(pmf, t)
	}
	for i, j := 0, len(pmf)-1; i < j; i, j = i+1, j-1 {
		pmf[i], pmf[j] = pmf[j], pmf[i]
	}
	for k, t := mode, top; k < n; k++ {
		t *= float64(n-k) / float64(k+1) * p / (1 - p)
		if t < cut {
			break
		}
		pmf = append(pmf, t)
	}
	return lo, pmf
}
