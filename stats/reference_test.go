package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// referenceVectors mirrors testdata/stats/reference_vectors.json, values
// computed with statsmodels 0.13.5 and scipy 1.10.1. A null there is a nil
// pointer here and must come back undefined.
type referenceVectors struct {
	McNemar []struct {
		B, C    int
		ExactP  float64  `json:"exact_p"`
		MidP    float64  `json:"midp"`
		Chi2    *float64 `json:"chi2"`
		Chi2P   *float64 `json:"chi2_p"`
		Chi2CC  *float64 `json:"chi2_cc"`
		Chi2CCP *float64 `json:"chi2_cc_p"`
	} `json:"mcnemar"`
	Proportion []struct {
		K, N      int
		Wilson95  [2]float64 `json:"wilson95"`
		Wilson99  [2]float64 `json:"wilson99"`
		Clopper95 [2]float64 `json:"clopper95"`
	} `json:"proportion"`
	PassK []struct {
		N, C, K int
		PassAtK float64 `json:"pass_at_k"`
	} `json:"passk"`
	Holm []struct {
		P        []float64
		Alpha    float64
		Adjusted []float64
		Reject   []bool
	} `json:"holm"`
}

func loadReference(t *testing.T) referenceVectors {
	t.Helper()
	data, err := os.ReadFile("../testdata/stats/reference_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref referenceVectors
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatalf("parse reference vectors: %v", err)
	}
	if len(ref.McNemar) == 0 || len(ref.Proportion) == 0 || len(ref.PassK) == 0 || len(ref.Holm) == 0 {
		t.Fatal("reference vectors: a section is empty or misnamed")
	}
	return ref
}

// approxEqual reports agreement within 1e-9 relative. The one exception is a
// reference within 1e-15 of 0, compared absolutely: statsmodels' Wilson
// lower bound at k = 0 is 0 plus rounding noise (-5.6e-17), which Wilson
// returns as exactly 0.
func approxEqual(got, want float64) bool {
	d := math.Abs(got - want)
	return d <= 1e-9*math.Max(math.Abs(got), math.Abs(want)) || (math.Abs(want) < 1e-15 && d < 1e-15)
}

func checkClose(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !approxEqual(got, want) {
		t.Errorf("%s = %.17g, want %.17g (rel err %.2g)", what, got, want, math.Abs(got-want)/math.Abs(want))
	}
}

func checkValue(t *testing.T, what string, got Value, want *float64) {
	t.Helper()
	v, ok := got.Get()
	switch {
	case want == nil && ok:
		t.Errorf("%s = %v, want undefined", what, v)
	case want != nil && !ok:
		t.Errorf("%s undefined, want %v", what, *want)
	case want != nil:
		checkClose(t, what, v, *want)
	}
}

func TestReferenceMcNemar(t *testing.T) {
	for i, c := range loadReference(t).McNemar {
		t.Run(fmt.Sprintf("%02d_b%d_c%d", i, c.B, c.C), func(t *testing.T) {
			r, err := McNemar(c.B, c.C)
			if err != nil {
				t.Fatal(err)
			}
			checkClose(t, "exact p", r.ExactP, c.ExactP)
			checkClose(t, "mid-p", r.MidP, c.MidP)
			checkValue(t, "chi2", r.ChiSq, c.Chi2)
			checkValue(t, "chi2 p", r.ChiSqP, c.Chi2P)
			checkValue(t, "chi2 cc", r.ChiSqCC, c.Chi2CC)
			checkValue(t, "chi2 cc p", r.ChiSqCCP, c.Chi2CCP)
		})
	}
}

func TestReferenceProportion(t *testing.T) {
	for i, c := range loadReference(t).Proportion {
		t.Run(fmt.Sprintf("%02d_k%d_n%d", i, c.K, c.N), func(t *testing.T) {
			for _, iv := range []struct {
				name  string
				f     func(k, n int, alpha float64) (Interval, error)
				alpha float64
				want  [2]float64
			}{
				{"wilson95", Wilson, 0.05, c.Wilson95},
				{"wilson99", Wilson, 0.01, c.Wilson99},
				{"clopper95", ClopperPearson, 0.05, c.Clopper95},
			} {
				got, err := iv.f(c.K, c.N, iv.alpha)
				if err != nil {
					t.Fatalf("%s: %v", iv.name, err)
				}
				checkClose(t, iv.name+" lo", got.Lo, iv.want[0])
				checkClose(t, iv.name+" hi", got.Hi, iv.want[1])
			}
		})
	}
}

func TestReferencePassAtK(t *testing.T) {
	for i, c := range loadReference(t).PassK {
		t.Run(fmt.Sprintf("%02d_n%d_c%d_k%d", i, c.N, c.C, c.K), func(t *testing.T) {
			got, err := PassAtK(c.N, c.C, c.K)
			if err != nil {
				t.Fatal(err)
			}
			checkClose(t, "pass@k", got, c.PassAtK)
		})
	}
}

func TestReferenceHolm(t *testing.T) {
	for i, c := range loadReference(t).Holm {
		t.Run(fmt.Sprintf("%02d_m%d", i, len(c.P)), func(t *testing.T) {
			got, err := Holm(c.P, c.Alpha)
			if err != nil {
				t.Fatal(err)
			}
			for j := range c.P {
				checkClose(t, fmt.Sprintf("adjusted[%d]", j), got.Adjusted[j], c.Adjusted[j])
				if got.Reject[j] != c.Reject[j] {
					t.Errorf("reject[%d] = %v, want %v", j, got.Reject[j], c.Reject[j])
				}
			}
		})
	}
}
