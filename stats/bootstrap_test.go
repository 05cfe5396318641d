package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// pairedBinary simulates n tasks on which two systems are right with joint
// probabilities p10 (only the first) and p01 (only the second); a quarter of
// the rest are solved by both.
func pairedBinary(rng *rand.Rand, n int, p10, p01 float64) (x, y []float64) {
	x, y = make([]float64, n), make([]float64, n)
	for i := range n {
		switch u := rng.Float64(); {
		case u < p10:
			x[i] = 1
		case u < p10+p01:
			y[i] = 1
		case u < p10+p01+(1-p10-p01)/4:
			x[i], y[i] = 1, 1
		}
	}
	return x, y
}

// pairedSkewed simulates real-valued scores whose differences are
// exponential with mean 1 shifted by delta−1, so the true mean difference
// is delta and the differences are skewed, the case BCa is for.
func pairedSkewed(rng *rand.Rand, n int, delta float64) (x, y []float64) {
	x, y = make([]float64, n), make([]float64, n)
	for i := range n {
		y[i] = rng.NormFloat64()
		x[i] = y[i] + rng.ExpFloat64() + delta - 1
	}
	return x, y
}

// TestBootstrapCoverage checks, on 400 simulated data sets per kind, that
// the 95% percentile and BCa intervals each cover the true difference
// 93–97% of the time (an undefined BCa interval counts as a miss). Seeds are fixed, so the counts are deterministic.
func TestBootstrapCoverage(t *testing.T) {
	const sets = 400
	for _, tc := range []struct {
		name string
		n, b int
		gen  func(*rand.Rand, int) (x, y []float64)
		true float64
	}{
		{"binary", 300, 2000, func(r *rand.Rand, n int) ([]float64, []float64) { return pairedBinary(r, n, 0.15, 0.10) }, 0.05},
		{"skewed", 300, 1000, func(r *rand.Rand, n int) ([]float64, []float64) { return pairedSkewed(r, n, 0.2) }, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			covered, coveredBCa := 0, 0
			for s := range sets {
				x, y := tc.gen(rng, tc.n)
				r, err := PairedBootstrap(x, y, BootstrapOptions{B: tc.b, Seed: uint64(s)})
				if err != nil {
					t.Fatal(err)
				}
				if r.Percentile.Lo <= tc.true && tc.true <= r.Percentile.Hi {
					covered++
				}
				if r.BCa != nil && r.BCa.Lo <= tc.true && tc.true <= r.BCa.Hi {
					coveredBCa++
				}
			}
			for _, c := range []struct {
				method  string
				covered int
			}{{"percentile", covered}, {"BCa", coveredBCa}} {
				rate := float64(c.covered) / sets
				t.Logf("%s coverage %.4f", c.method, rate)
				if rate < 0.93 || rate > 0.97 {
					t.Errorf("95%% %s interval covered the truth in %d of %d sets (%.1f%%), want 93–97%%", c.method, c.covered, sets, 100*rate)
				}
			}
		})
	}
}

func BenchmarkPairedBootstrap(b *testing.B) {
	const n = 1534
	rng := rand.New(rand.NewPCG(7, 7))
	bx, by := pairedBinary(rng, n, 0.12, 0.08)
	rx, ry := pairedSkewed(rng, n, 0.1)
	for _, bc := range []struct {
		name string
		x, y []float64
	}{{"binary", bx, by}, {"real", rx, ry}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PairedBootstrap(bc.x, bc.y, BootstrapOptions{B: 10000, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestPairedBootstrapDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bx, by := pairedBinary(rng, 500, 0.2, 0.1)
	rx, ry := pairedSkewed(rng, 500, 0.1)
	for _, tc := range []struct {
		name string
		x, y []float64
	}{{"binary", bx, by}, {"real", rx, ry}} {
		t.Run(tc.name, func(t *testing.T) {
			x, y := tc.x, tc.y
			opts := BootstrapOptions{B: 2000, Seed: 42}
			a, err := PairedBootstrap(x, y, opts)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := PairedBootstrap(x, y, opts)
			if a.Percentile != b.Percentile || *a.BCa != *b.BCa {
				t.Errorf("same seed, different intervals: %+v vs %+v", a, b)
			}
			opts.Seed++
			c, _ := PairedBootstrap(x, y, opts)
			if a.Percentile == c.Percentile {
				t.Errorf("seeds 42 and 43 gave the same interval %+v", a.Percentile)
			}
			if a.N != 500 || a.B != 2000 || a.Seed != 42 || a.Alpha != DefaultAlpha {
				t.Errorf("result does not report its inputs: %+v", a)
			}
			if !(a.Percentile.Lo < a.Estimate && a.Estimate < a.Percentile.Hi) {
				t.Errorf("estimate %v outside percentile interval %+v", a.Estimate, a.Percentile)
			}
		})
	}
}

// TestResampleTernaryMatchesIndexResampling checks the 0/1 shortcut against
// resampling task indices and against the exact moments of the bootstrap
// mean of n differences with b at +1 and c at −1: mean (b−c)/n and variance
// ((b+c)/n − ((b−c)/n)²)/n.
func TestResampleTernaryMatchesIndexResampling(t *testing.T) {
	const n, plus, minus, reps = 1534, 180, 120, 20000
	d := make([]float64, n)
	for i := range plus {
		d[i] = 1
	}
	for i := range minus {
		d[plus+i] = -1
	}
	fast, slow := make([]float64, reps), make([]float64, reps)
	resampleTernary(fast, n, plus, minus, rand.NewPCG(1, 1))
	resampleValues(slow, d, rand.NewPCG(2, 2))
	slices.Sort(slow)

	mu := float64(plus-minus) / n
	sd := math.Sqrt((float64(plus+minus)/n - mu*mu) / n)
	for name, r := range map[string][]float64{"ternary": fast, "indices": slow} {
		var m, v float64
		for _, x := range r {
			m += x
		}
		m /= reps
		for _, x := range r {
			v += (x - m) * (x - m)
		}
		v /= reps - 1
		if math.Abs(m-mu) > 4*sd/math.Sqrt(reps) {
			t.Errorf("%s: mean %v, want %v", name, m, mu)
		}
		if math.Abs(math.Sqrt(v)/sd-1) > 0.02 {
			t.Errorf("%s: sd %v, want %v", name, math.Sqrt(v), sd)
		}
	}
	for _, q := range []float64{0.025, 0.5, 0.975} {
		if a, b := quantileSorted(fast, q), quantileSorted(slow, q); math.Abs(a-b) > 0.1*sd {
			t.Errorf("quantile %v: ternary %v, indices %v", q, a, b)
		}
	}
}

func TestPairedBootstrapConstantDifference(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"all concordant 0/1", []float64{1, 0, 1, 1, 0}, []float64{1, 0, 1, 1, 0}, 0},
		{"constant real shift", []float64{1.5, 2.5, 0.5}, []float64{1, 2, 0}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := PairedBootstrap(tc.x, tc.y, BootstrapOptions{B: MinResamples})
			if err != nil {
				t.Fatal(err)
			}
			point := Interval{Lo: tc.want, Hi: tc.want}
			if r.Estimate != tc.want || r.Percentile != point || r.BCa == nil || *r.BCa != point {
				t.Errorf("got estimate %v, percentile %+v, BCa %+v; want %v and [%v, %v] twice", r.Estimate, r.Percentile, r.BCa, tc.want, tc.want, tc.want)
			}
		})
	}
}

func TestBCaUndefined(t *testing.T) {
	reps := []float64{1, 2, 3, 4}
	if iv := bcaInterval(reps, []float64{0, 1}, 0.5, 0.05); iv != nil {
		t.Errorf("every replicate above the estimate: BCa = %+v, want nil", *iv)
	}
	r := BootstrapResult{N: 2, B: 100}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "bca") {
		t.Errorf("undefined BCa is in the JSON: %s", data)
	}
}

func TestQuantileSortedMatchesNumPy(t *testing.T) {
	// Expected values are numpy.percentile(xs, 100*q) with its default
	// method="linear".
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 0.25, 1.75},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.025, 0.225},
		{[]float64{0.1, 0.7, 3.2}, 0.975, 3.075},
		{[]float64{5}, 0.3, 5},
	} {
		if got := quantileSorted(tc.xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
}
