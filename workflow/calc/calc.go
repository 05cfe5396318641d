// Package calc is rlgate stats: small calculators that let a user
// recompute, from a paper's counts, every number rlgate prints, each one
// statistic of package stats with its summary and text. They read no
// ledger. Each function refuses counts or a level out of range as a
// usage.Error naming the flag, then checks the rest as package stats does.
package calc

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rlgate/rlgate/stats"
	"github.com/rlgate/rlgate/workflow/textout"
	"github.com/rlgate/rlgate/workflow/usage"
)

// McNemarSummary is what stats mcnemar prints.
type McNemarSummary struct {
	stats.McNemarResult
	N     int         `json:"n,omitempty"`
	Alpha float64     `json:"alpha"`
	MDE   stats.Value `json:"mde,omitzero"`
}

// McNemar is McNemar's test on the discordant counts b and c and, when n
// paired tasks are given (n > 0), the minimum detectable effect at 80%
// power and level alpha. Counts or a level out of range are a usage.Error.
func McNemar(b, c, n int, alpha float64) (*McNemarSummary, error) {
	if err := usage.First(usage.Count("b", b, 0, math.MaxInt), usage.Count("c", c, 0, math.MaxInt), usage.Alpha(alpha)); err != nil {
		return nil, err
	}
	if n != 0 && n < b+c {
		return nil, usage.Errorf("--n %d: want 0 (not given) or at least b+c = %d", n, b+c)
	}
	r, err := stats.McNemar(b, c)
	if err != nil {
		return nil, err
	}
	s := &McNemarSummary{McNemarResult: r, N: n, Alpha: alpha}
	if n > 0 {
		if s.MDE, err = stats.MinDetectableEffect(n, b+c, alpha, 0.8); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// WriteText writes a table of the statistics.
func (s *McNemarSummary) WriteText(w io.Writer) error {
	r := s.McNemarResult
	t := textout.NewTable(w, "statistic", "value")
	t.Append("b, c", fmt.Sprintf("%d, %d", r.B, r.C))
	t.Append("exact p (two-sided)", fmt.Sprintf("%.6g", r.ExactP))
	t.Append("mid-p", fmt.Sprintf("%.6g", r.MidP))
	t.Append("chi-square", fmt.Sprintf("%.6g", r.ChiSq))
	t.Append("chi-square p", fmt.Sprintf("%.6g", r.ChiSqP))
	t.Append("chi-square (continuity corr.)", fmt.Sprintf("%.6g", r.ChiSqCC))
	t.Append("chi-square p (continuity corr.)", fmt.Sprintf("%.6g", r.ChiSqCCP))
	if s.N > 0 {
		t.Append(fmt.Sprintf("min. detectable effect (n=%d, 80%% power, alpha=%g)", s.N, s.Alpha), fmt.Sprintf("%.4f", s.MDE))
	}
	return t.Render()
}

// HolmSummary is what stats holm prints.
type HolmSummary struct {
	P     []float64 `json:"p"`
	Alpha float64   `json:"alpha"`
	stats.HolmResult
}

// ParsePValues reads holm's arguments, each a p-value from 0 to 1; none,
// or one that is not a p-value, is a usage.Error.
func ParsePValues(args []string) ([]float64, error) {
	var ps []float64
	for _, a := range args {
		p, err := strconv.ParseFloat(a, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return nil, usage.Errorf("holm: %q is not a p-value: want a number from 0 to 1", a)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, usage.Errorf("holm needs at least one p-value")
	}
	return ps, nil
}

// Holm is the Holm step-down adjustment of ps at family-wise level alpha.
func Holm(ps []float64, alpha float64) (*HolmSummary, error) {
	if err := usage.Alpha(alpha); err != nil {
		return nil, err
	}
	r, err := stats.Holm(ps, alpha)
	if err != nil {
		return nil, err
	}
	return &HolmSummary{P: ps, Alpha: alpha, HolmResult: r}, nil
}

// WriteText writes each p-value, adjusted, and whether it is rejected.
func (s *HolmSummary) WriteText(w io.Writer) error {
	t := textout.NewTable(w, "p", "Holm-adjusted p", fmt.Sprintf("rejected at %g", s.Alpha))
	for i, p := range s.P {
		t.Append(fmt.Sprintf("%.6g", p), fmt.Sprintf("%.6g", s.Adjusted[i]), fmt.Sprint(s.Reject[i]))
	}
	return t.Render()
}

// WilsonSummary is what stats wilson prints.
type WilsonSummary struct {
	K              int            `json:"k"`
	N              int            `json:"n"`
	Alpha          float64        `json:"alpha"`
	Accuracy       float64        `json:"accuracy"`
	Wilson         stats.Interval `json:"wilson"`
	ClopperPearson stats.Interval `json:"clopper_pearson"`
}

// Wilson is the accuracy k/n with its Wilson and Clopper-Pearson
// intervals at level 1-alpha. Counts or a level out of range are a
// usage.Error.
func Wilson(k, n int, alpha float64) (*WilsonSummary, error) {
	if err := usage.First(usage.Count("n", n, 1, math.MaxInt), usage.Count("k", k, 0, n), usage.Alpha(alpha)); err != nil {
		return nil, err
	}
	wi, err := stats.Wilson(k, n, alpha)
	if err != nil {
		return nil, err
	}
	cp, err := stats.ClopperPearson(k, n, alpha)
	if err != nil {
		return nil, err
	}
	return &WilsonSummary{K: k, N: n, Alpha: alpha, Accuracy: float64(k) / float64(n), Wilson: wi, ClopperPearson: cp}, nil
}

// WriteText writes the accuracy and both intervals.
func (s *WilsonSummary) WriteText(w io.Writer) error {
	level := 100 * (1 - s.Alpha)
	_, err := fmt.Fprintf(w, "accuracy %d/%d = %.4f\nWilson %g%%          [%.4f, %.4f]\nClopper-Pearson %g%% [%.4f, %.4f]\n",
		s.K, s.N, s.Accuracy, level, s.Wilson.Lo, s.Wilson.Hi, level, s.ClopperPearson.Lo, s.ClopperPearson.Hi)
	return err
}

// PassKSummary is what stats passk prints.
type PassKSummary struct {
	N       int     `json:"n"`
	C       int     `json:"c"`
	K       int     `json:"k"`
	PassAtK float64 `json:"pass_at_k"`
}

// PassK is the unbiased pass@k of n samples with c correct. Counts out of
// range are a usage.Error.
func PassK(n, c, k int) (*PassKSummary, error) {
	if err := usage.First(usage.Count("n", n, 1, math.MaxInt), usage.Count("c", c, 0, n), usage.Count("k", k, 1, n)); err != nil {
		return nil, err
	}
	p, err := stats.PassAtK(n, c, k)
	if err != nil {
		return nil, err
	}
	return &PassKSummary{N: n, C: c, K: k, PassAtK: p}, nil
}

// WriteText writes pass@k with the counts it came from.
func (s *PassKSummary) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "pass@%d = %.6g (unbiased estimator, n=%d samples, c=%d correct)\n", s.K, s.PassAtK, s.N, s.C)
	return err
}
