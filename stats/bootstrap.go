package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

const (
	// DefaultResamples is the number of bootstrap resamples used when
	// BootstrapOptions.B is 0.
	DefaultResamples = 10000
	// MinResamples is the fewest resamples PairedBootstrap accepts: with
	// fewer, a 95% interval rests on two or three replicates per tail.
	MinResamples = 100
	// DefaultAlpha is the level used when BootstrapOptions.Alpha is 0.
	DefaultAlpha = 0.05
)

// BootstrapOptions configures PairedBootstrap. The zero value asks for
// DefaultResamples resamples, seed 0 and 95% intervals.
type BootstrapOptions struct {
	// B is the number of resamples; 0 means DefaultResamples.
	B int
	// Seed seeds the generator; the same data, B and Seed give the same
	// result on every platform.
	Seed uint64
	// Alpha is one minus the confidence level; 0 means DefaultAlpha.
	Alpha float64
}

// BootstrapResult reports a paired bootstrap with what is needed to redo it.
type BootstrapResult struct {
	N     int     `json:"n"`
	B     int     `json:"b"`
	Seed  uint64  `json:"seed"`
	Alpha float64 `json:"alpha"`
	// Estimate is the observed difference of means, mean(x) − mean(y),
	// computed as the mean of the per-task differences.
	Estimate float64 `json:"estimate"`
	// Percentile is the percentile interval: the alpha/2 and 1 − alpha/2
	// quantiles of the resampled differences.
	Percentile Interval `json:"percentile"`
	// BCa is the bias-corrected and accelerated interval, nil when it is
	// undefined: every replicate fell on one side of Estimate, or the
	// acceleration is too large for the level.
	BCa *Interval `json:"bca,omitempty"`
}

// PairedBootstrap resamples tasks with replacement to give confidence
// intervals for mean(x) − mean(y), where x[i] and y[i] are two systems'
// scores on task i (0/1 for correctness, or any real score). Resampling
// pairs, not each system apart, keeps the correlation between systems that
// makes a paired comparison sharp.
//
// When every per-task difference is −1, 0 or 1 (0/1 outcomes), a resample
// is determined by how many +1 and −1 tasks it draws, a multinomial count:
// PairedBootstrap computes the exact distribution of that count once and
// draws each replicate from it with one uniform variate. Replicates have
// the same distribution as those of drawing n task indices, at a tiny
// fraction of the cost, but are not the same draws. Other data are
// resampled index by index.
func PairedBootstrap(x, y []float64, opts BootstrapOptions) (BootstrapResult, error) {
	if opts.B == 0 {
		opts.B = DefaultResamples
	}
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	switch {
	case len(x) != len(y):
		return BootstrapResult{}, fmt.Errorf("paired bootstrap: %d and %d scores: %w", len(x), len(y), ErrLengthMismatch)
	case len(x) == 0:
		return BootstrapResult{}, fmt.Errorf("paired bootstrap: %w", ErrEmpty)
	case uint64(len(x)) > math.MaxUint32:
		return BootstrapResult{}, fmt.Errorf("paired bootstrap: %d tasks, at most 2^32-1: %w", len(x), ErrCount)
	case opts.B < MinResamples:
		return BootstrapResult{}, fmt.Errorf("paired bootstrap: B=%d, need at least %d: %w", opts.B, MinResamples, ErrResamples)
	}
	if err := checkAlpha(opts.Alpha); err != nil {
		return BootstrapResult{}, fmt.Errorf("paired bootstrap: %w", err)
	}

	d := make([]float64, len(x))
	var sum float64
	ternary := true
	var plus, minus int
	for i := range x {
		d[i] = x[i] - y[i]
		if math.IsNaN(d[i]) || math.IsInf(d[i], 0) {
			return BootstrapResult{}, fmt.Errorf("paired bootstrap: task %d: x=%v y=%v: %w", i, x[i], y[i], ErrNonFinite)
		}
		sum += d[i]
		switch d[i] {
		case 1:
			plus++
		case -1:
			minus++
		case 0:
		default:
			ternary = false
		}
	}
	n := float64(len(d))

	// NB: the generator and its seeding fix every recorded bootstrap;
	// changing them changes the intervals a ledger holds evidence for.
	rng := rand.NewPCG(opts.Seed, opts.Seed)
	reps := make([]float64, opts.B)
	if ternary {
		resampleTernary(reps, len(d), plus, minus, rng)
	} else {
		resampleValues(reps, d, rng)
		slices.Sort(reps)
	}

	r := BootstrapResult{
		N:        len(d),
		B:        opts.B,
		Seed:     opts.Seed,
		Alpha:    opts.Alpha,
		Estimate: sum / n,
		Percentile: Interval{
			Lo: quantileSorted(reps, opts.Alpha/2),
			Hi: quantileSorted(reps, 1-opts.Alpha/2),
		},
	}
	r.BCa = bcaInterval(reps, d, r.Estimate, opts.Alpha)
	return r, nil
}

// resampleTernary fills reps, in ascending order, with B bootstrap means of
// n differences of which plus are +1, minus are −1 and the rest 0. The
// resampled sum is S = N₊ − N₋; the number of discordant draws
// D = N₊ + N₋ is Binomial(n, (plus+minus)/n) and, given D, N₊ is
// Binomial(D, plus/(plus+minus)); mixing these gives P(S = s) exactly.
func resampleTernary(reps []float64, n, plus, minus int, rng *rand.PCG) {
	disc := plus + minus
	q := 0.0
	if disc > 0 {
		q = float64(plus) / float64(disc)
	}
	cum := make([]float64, 2*n+1) // P(S = s) at s+n, then cumulated
	dLo, dProb := binomWindow(n, float64(disc)/float64(n), nil)
	var buf []float64
	for i, pd := range dProb {
		dd := dLo + i
		jLo, jProb := binomWindow(dd, q, buf)
		for j, pj := range jProb {
			cum[2*(jLo+j)-dd+n] += pd * pj
		}
		buf = jProb
	}
	for s := 1; s < len(cum); s++ {
		cum[s] += cum[s-1]
	}
	total := cum[len(cum)-1]

	counts := make([]int, len(cum))
	for range reps {
		u := float64(rng.Uint64()>>11) * 0x1p-53 * total
		counts[sort.Search(len(cum), func(s int) bool { return cum[s] > u })]++
	}
	i := 0
	for s, c := range counts {
		for range c {
			reps[i] = float64(s-n) / float64(n)
			i++
		}
	}
}

// resampleValues fills reps with bootstrap means of d, each from len(d)
// indices drawn uniformly with replacement. Each 64-bit output of the
// generator gives two indices by Lemire's multiply-shift method on its
// halves, whose rejection step keeps every draw exactly uniform; two
// accumulators let consecutive additions overlap.
func resampleValues(reps, d []float64, rng *rand.PCG) {
	n := uint32(len(d))
	reject := -n % n // a product whose low word falls below this is biased
	index := func(x uint32) uint32 {
		m := uint64(x) * uint64(n)
		for uint32(m) < reject {
			m = uint64(uint32(rng.Uint64())) * uint64(n)
		}
		return uint32(m >> 32)
	}
	for b := range reps {
		var s0, s1 float64
		for range len(d) / 2 {
			u := rng.Uint64()
			s0 += d[index(uint32(u))]
			s1 += d[index(uint32(u>>32))]
		}
		if len(d)%2 == 1 {
			s0 += d[index(uint32(rng.Uint64()))]
		}
		reps[b] = (s0 + s1) / float64(n)
	}
}

// quantileSorted returns the q-quantile of ascending xs by NumPy's default
// rule ("linear", Hyndman and Fan type 7): the value at position q·(len−1),
// interpolated linearly between its neighbours, with NumPy's choice of
// interpolating from the upper neighbour past the midpoint.
func quantileSorted(xs []float64, q float64) float64 {
	h := q * float64(len(xs)-1)
	lo := int(h)
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	t := h - float64(lo)
	a, b := xs[lo], xs[lo+1]
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}

// bcaInterval returns Efron's bias-corrected and accelerated interval
// (Efron and Tibshirani 1993, ch. 14) from ascending replicates reps of the
// mean of d, or nil when it is undefined. The bias z0 counts
// replicates equal to theta as half below: 0/1 data put a sizeable share of
// replicates exactly on theta, and counting them all as above (as scipy
// does) would bias z0. The acceleration is the jackknife's, which for a mean
// has the closed form Σe³ / (6 (Σe²)^1.5) with e = d − mean(d); when all
// differences are equal it is taken as 0 and the interval is [theta, theta],
// the only value the bootstrap distribution takes.
func bcaInterval(reps, d []float64, theta, alpha float64) *Interval {
	below, _ := slices.BinarySearch(reps, theta)
	notAbove := sort.Search(len(reps), func(i int) bool { return reps[i] > theta })
	tied := notAbove - below
	z0 := distuv.UnitNormal.Quantile((float64(below) + float64(tied)/2) / float64(len(reps)))
	if math.IsInf(z0, 0) {
		return nil
	}

	var s2, s3 float64
	for _, v := range d {
		e := v - theta
		s2 += e * e
		s3 += e * e * e
	}
	a := 0.0
	if s2 > 0 {
		a = s3 / (6 * math.Pow(s2, 1.5))
	}

	level := func(q float64) (float64, bool) {
		z := z0 + distuv.UnitNormal.Quantile(q)
		den := 1 - a*z
		if den <= 0 {
			return 0, false
		}
		return distuv.UnitNormal.CDF(z0 + z/den), true
	}
	lo, okLo := level(alpha / 2)
	hi, okHi := level(1 - alpha/2)
	if !okLo || !okHi {
		return nil
	}
	return &Interval{Lo: quantileSorted(reps, lo), Hi: quantileSorted(reps, hi)}
}
