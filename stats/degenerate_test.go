package stats

import (
	"errors"
	"math"
	"testing"
)

// TestDegenerateInputs checks that every function refuses input it cannot
// answer for with the documented sentinel error.
func TestDegenerateInputs(t *testing.T) {
	call := func(err error) func() error { return func() error { return err } }
	second := func(_ any, err error) error { return err }
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		run  func() error
		want error
	}{
		{"wilson n=0", call(second(Wilson(0, 0, 0.05))), ErrEmpty},
		{"wilson k>n", call(second(Wilson(6, 5, 0.05))), ErrCount},
		{"wilson k<0", call(second(Wilson(-1, 5, 0.05))), ErrCount},
		{"wilson alpha=1", call(second(Wilson(1, 5, 1))), ErrProbability},
		{"wilson alpha NaN", call(second(Wilson(1, 5, nan))), ErrProbability},
		{"clopper n<0", call(second(ClopperPearson(0, -3, 0.05))), ErrEmpty},
		{"clopper k>n", call(second(ClopperPearson(4, 3, 0.05))), ErrCount},
		{"clopper alpha=0", call(second(ClopperPearson(1, 3, 0))), ErrProbability},
		{"mcnemar b<0", call(second(McNemar(-1, 3))), ErrCount},
		{"mcnemar c<0", call(second(McNemar(3, -1))), ErrCount},
		{"holm empty", call(second(Holm(nil, 0.05))), ErrEmpty},
		{"holm p>1", call(second(Holm([]float64{0.01, 1.2}, 0.05))), ErrProbability},
		{"holm p<0", call(second(Holm([]float64{-0.01}, 0.05))), ErrProbability},
		{"holm p NaN", call(second(Holm([]float64{nan}, 0.05))), ErrProbability},
		{"holm alpha=0", call(second(Holm([]float64{0.01}, 0))), ErrProbability},
		{"pass@k n=0", call(second(PassAtK(0, 0, 1))), ErrEmpty},
		{"pass@k k>n", call(second(PassAtK(5, 2, 6))), ErrCount},
		{"pass@k k=0", call(second(PassAtK(5, 2, 0))), ErrCount},
		{"pass@k c>n", call(second(PassAtK(5, 6, 1))), ErrCount},
		{"pass@k c<0", call(second(PassAtK(5, -1, 1))), ErrCount},
		{"bootstrap mismatched lengths", call(second(PairedBootstrap([]float64{1, 0}, []float64{1}, BootstrapOptions{}))), ErrLengthMismatch},
		{"bootstrap no pairs", call(second(PairedBootstrap(nil, nil, BootstrapOptions{}))), ErrEmpty},
		{"bootstrap B<100", call(second(PairedBootstrap([]float64{1}, []float64{0}, BootstrapOptions{B: 99}))), ErrResamples},
		{"bootstrap B<0", call(second(PairedBootstrap([]float64{1}, []float64{0}, BootstrapOptions{B: -1}))), ErrResamples},
		{"bootstrap alpha>1", call(second(PairedBootstrap([]float64{1}, []float64{0}, BootstrapOptions{Alpha: 2}))), ErrProbability},
		{"bootstrap NaN", call(second(PairedBootstrap([]float64{1, nan}, []float64{0, 0}, BootstrapOptions{}))), ErrNonFinite},
		{"bootstrap Inf", call(second(PairedBootstrap([]float64{1, 0}, []float64{0, math.Inf(1)}, BootstrapOptions{}))), ErrNonFinite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDegenerateDefined checks the edge cases that have a defined answer.
func TestDegenerateDefined(t *testing.T) {
	t.Run("mcnemar no discordant pairs", func(t *testing.T) {
		r, err := McNemar(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.ExactP != 1 || r.MidP != 1 {
			t.Errorf("exact p %v, mid-p %v, want 1 and 1", r.ExactP, r.MidP)
		}
		for name, v := range map[string]Value{"chi2": r.ChiSq, "chi2 p": r.ChiSqP, "chi2 cc": r.ChiSqCC, "chi2 cc p": r.ChiSqCCP} {
			if _, ok := v.Get(); ok {
				t.Errorf("%s = %v, want undefined", name, v)
			}
		}
	})
	t.Run("pass@k all wrong and all right", func(t *testing.T) {
		if p, _ := PassAtK(10, 0, 3); p != 0 {
			t.Errorf("pass@3 with no correct sample = %v, want 0", p)
		}
		if p, _ := PassAtK(10, 10, 3); p != 1 {
			t.Errorf("pass@3 with every sample correct = %v, want 1", p)
		}
	})
	t.Run("intervals at k=0 and k=n", func(t *testing.T) {
		for _, f := range []func(k, n int, alpha float64) (Interval, error){Wilson, ClopperPearson} {
			lo, _ := f(0, 7, 0.05)
			hi, _ := f(7, 7, 0.05)
			if lo.Lo != 0 || hi.Hi != 1 {
				t.Errorf("bounds at k=0 and k=n: %+v, %+v; want Lo=0 and Hi=1 exactly", lo, hi)
			}
		}
	})
	t.Run("holm single p", func(t *testing.T) {
		r, _ := Holm([]float64{0.03}, 0.05)
		if r.Adjusted[0] != 0.03 || !r.Reject[0] {
			t.Errorf("one hypothesis: %+v, want it unchanged and rejected", r)
		}
	})
}
