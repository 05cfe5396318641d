package stats

import (
	"errors"
	"math"
	"testing"
	"time"
)

// bruteMcNemarPower is the definition of power written out with the public
// McNemar function: a double sum over the discordant count m and the count b
// favouring the first system.
func bruteMcNemarPower(n int, psi, delta, alpha float64) float64 {
	pi := (psi + delta) / (2 * psi)
	var power float64
	for m := 0; m <= n; m++ {
		pm := math.Exp(binomLogPMF(m, n, psi))
		for b := 0; b <= m; b++ {
			r, _ := McNemar(b, m-b)
			if r.ExactP < alpha {
				power += pm * math.Exp(binomLogPMF(b, m, pi))
			}
		}
	}
	return power
}

func TestMcNemarPowerMatchesDefinition(t *testing.T) {
	for _, tc := range []struct {
		n    int
		psi  float64
		alpa float64
	}{{40, 0.3, 0.05}, {25, 0.6, 0.05}, {60, 0.15, 0.01}, {30, 1, 0.05}} {
		pw := mcnemarPower(tc.n, tc.psi, tc.alpa)
		for _, f := range []float64{0, 0.25, 0.5, 0.9, 1} {
			delta := f * tc.psi
			got, want := pw(delta), bruteMcNemarPower(tc.n, tc.psi, delta, tc.alpa)
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("n=%d psi=%v delta=%v: power %.15g, definition gives %.15g", tc.n, tc.psi, delta, got, want)
			}
		}
	}
}

func TestMinDetectableEffect(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, discordant int
		defined       bool
	}{
		{"bird-dev", 1534, 300, true},
		{"small", 100, 30, true},
		{"all-discordant", 200, 200, true},
		{"large", 5000, 2500, true},
		{"too-few-discordant", 10, 1, false},
		{"all-concordant", 500, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			v, err := MinDetectableEffect(tc.n, tc.discordant, 0.05, 0.8)
			if err != nil {
				t.Fatal(err)
			}
			delta, ok := v.Get()
			t.Logf("MDE = %v in %v", v, time.Since(start))
			if ok != tc.defined {
				t.Fatalf("defined = %v, want %v", ok, tc.defined)
			}
			if !ok {
				return
			}
			psi := float64(tc.discordant) / float64(tc.n)
			pw := mcnemarPower(tc.n, psi, 0.05)
			if p := pw(delta); p < 0.8 {
				t.Errorf("power at MDE %v is %v, want ≥ 0.8", delta, p)
			}
			if p := pw(delta - 1e-6); delta > 1e-6 && p >= 0.8 {
				t.Errorf("power just below MDE %v is already %v", delta, p)
			}
			// The normal approximation (z_{α/2} + z_β)·√(ψ/n) should be close
			// when many tasks are discordant.
			if tc.discordant >= 30 && tc.discordant < tc.n {
				approx := (criticalZ(0.05) + criticalZ(0.4)) * math.Sqrt(psi/float64(tc.n))
				if math.Abs(delta-approx) > 0.15*approx {
					t.Errorf("MDE %v far from normal approximation %v", delta, approx)
				}
			}
		})
	}
}

func TestMinDetectableEffectErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, discordant int
		alpha, power  float64
		want          error
	}{
		{"no tasks", 0, 0, 0.05, 0.8, ErrEmpty},
		{"negative discordant", 10, -1, 0.05, 0.8, ErrCount},
		{"discordant above n", 10, 11, 0.05, 0.8, ErrCount},
		{"alpha zero", 10, 5, 0, 0.8, ErrProbability},
		{"power one", 10, 5, 0.05, 1, ErrProbability},
		{"power NaN", 10, 5, 0.05, math.NaN(), ErrProbability},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := MinDetectableEffect(tc.n, tc.discordant, tc.alpha, tc.power); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
