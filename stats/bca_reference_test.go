package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestBCaMatchesScipy compares the BCa interval with scipy.stats.bootstrap
// (method='BCa', paired) on skewed real-valued differences, where BCa and
// the percentile interval part. Both sides are Monte Carlo: scipy's figure
// is the mean over five seeds of 200,000 resamples each, and its seed to
// seed spread is about 0.003, so the bound below is Monte Carlo error, not
// a disagreement in method; the test also requires the percentile interval
// to be further off, so a BCa that fell back to percentile would fail.
func TestBCaMatchesScipy(t *testing.T) {
	b, err := os.ReadFile("../testdata/stats/bca-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name     string    `json:"name"`
			X        []float64 `json:"x"`
			Y        []float64 `json:"y"`
			Low      float64   `json:"bca_low"`
			High     float64   `json:"bca_high"`
			Estimate float64   `json:"estimate"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	const tol = 0.006
	for _, c := range file.Cases {
		r, err := PairedBootstrap(c.X, c.Y, BootstrapOptions{B: 200000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.BCa == nil {
			t.Fatalf("%s: BCa undefined", c.Name)
		}
		t.Logf("%s: BCa [%.5f, %.5f], scipy [%.5f, %.5f], percentile [%.5f, %.5f]", c.Name, r.BCa.Lo, r.BCa.Hi, c.Low, c.High, r.Percentile.Lo, r.Percentile.Hi)
		if math.Abs(r.Estimate-c.Estimate) > 1e-12 {
			t.Errorf("%s: estimate %v, scipy %v", c.Name, r.Estimate, c.Estimate)
		}
		if math.Abs(r.BCa.Lo-c.Low) > tol || math.Abs(r.BCa.Hi-c.High) > tol {
			t.Errorf("%s: BCa [%v, %v], scipy [%v, %v] (tolerance %v)", c.Name, r.BCa.Lo, r.BCa.Hi, c.Low, c.High, tol)
		}
		if math.Abs(r.Percentile.Lo-c.Low) < 2*tol && math.Abs(r.Percentile.Hi-c.High) < 2*tol {
			t.Errorf("%s: the percentile interval is as close to scipy's BCa as ours: the case no longer tells the methods apart", c.Name)
		}
	}
}
