package stats

import "fmt"

// PassAtK returns the unbiased estimator of pass@k from n samples of which
// c are correct (Chen et al. 2021, "Evaluating Large Language Models
// Trained on Code"): the probability that k samples drawn without
// replacement from the n include a correct one, 1 − C(n−c, k)/C(n, k).
// It is computed as the product 1 − ∏_{i=n−c+1}^{n} (1 − k/i), which never
// forms the binomial coefficients and so neither overflows nor cancels.
// The seeds' "any of k" rate is biased for k < n; report this one.
func PassAtK(n, c, k int) (float64, error) {
	switch {
	case n <= 0:
		return 0, fmt.Errorf("pass@k: n=%d samples: %w", n, ErrEmpty)
	case c < 0 || c > n:
		return 0, fmt.Errorf("pass@k: c=%d correct of n=%d: %w", c, n, ErrCount)
	case k < 1 || k > n:
		return 0, fmt.Errorf("pass@k: k=%d of n=%d samples: %w", k, n, ErrCount)
	}
	if n-c < k {
		return 1, nil
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, nil
}
