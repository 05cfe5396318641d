package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rlgate/rlgate/stats"
	"github.com/urfave/cli/v3"
)

// The stats calculators let a user recompute, from a paper's counts, every
// number rlgate prints; they read no ledger.
func newStatsCommand() *cli.Command {
	alpha := &cli.FloatFlag{Name: "alpha", Value: stats.DefaultAlpha, Usage: "significance level (0.05 = 95% intervals)"}
	return &cli.Command{
		Name:  "stats",
		Usage: "small calculators for the paired statistics rlgate uses",
		Description: "Each subcommand computes one statistic from counts, as statsmodels does,\n" +
			"so any number in an rlgate report can be checked by hand.\n\n" + exitCodesHelp,
		Commands: []*cli.Command{
			{
				Name:  "mcnemar",
				Usage: "McNemar's test on discordant counts b and c",
				Description: "b = tasks only the first system solved, c = tasks only the second solved.\n" +
					"Prints the exact two-sided p, mid-p, and chi-square with and without\n" +
					"continuity correction; with --n, also the minimum detectable effect.\n\n" + exitCodesHelp,
				Flags: []cli.Flag{jsonFlag,
					&cli.IntFlag{Name: "b", Usage: "tasks only the first system solved", Required: true},
					&cli.IntFlag{Name: "c", Usage: "tasks only the second system solved", Required: true},
					&cli.IntFlag{Name: "n", Usage: "paired tasks in all (for the minimum detectable effect)"},
					alpha,
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if err := checkFlags(countFlag(cmd, "b", 0, math.MaxInt), countFlag(cmd, "c", 0, math.MaxInt), alphaFlag(cmd)); err != nil {
						return err
					}
					if n, bc := int(cmd.Int("n")), int(cmd.Int("b")+cmd.Int("c")); n != 0 && n < bc {
						return usagef("--n %d: want 0 (not given) or at least b+c = %d", n, bc)
					}
					_, err := runMcNemar(mcnemarOptions{B: int(cmd.Int("b")), C: int(cmd.Int("c")), N: int(cmd.Int("n")), Alpha: cmd.Float("alpha"), JSON: cmd.Bool("json")}, cmd.Root().Writer)
					return err
				},
			},
			{
				Name:        "wilson",
				Usage:       "Wilson and Clopper-Pearson intervals for k correct of n",
				Description: "Prints the accuracy k/n with both two-sided intervals at level 1-alpha.\n\n" + exitCodesHelp,
				Flags: []cli.Flag{jsonFlag,
					&cli.IntFlag{Name: "k", Usage: "correct answers", Required: true},
					&cli.IntFlag{Name: "n", Usage: "tasks", Required: true},
					alpha,
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					n := int(cmd.Int("n"))
					if err := checkFlags(countFlag(cmd, "n", 1, math.MaxInt), countFlag(cmd, "k", 0, n), alphaFlag(cmd)); err != nil {
						return err
					}
					_, err := runWilson(int(cmd.Int("k")), int(cmd.Int("n")), cmd.Float("alpha"), cmd.Bool("json"), cmd.Root().Writer)
					return err
				},
			},
			{
				Name:        "passk",
				Usage:       "unbiased pass@k from n samples with c correct",
				Description: "Prints 1 - C(n-c,k)/C(n,k), the unbiased estimator (not 'any of k').\n\n" + exitCodesHelp,
				Flags: []cli.Flag{jsonFlag,
					&cli.IntFlag{Name: "n", Usage: "samples per task", Required: true},
					&cli.IntFlag{Name: "c", Usage: "correct samples", Required: true},
					&cli.IntFlag{Name: "k", Usage: "k of pass@k", Required: true},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					n := int(cmd.Int("n"))
					if err := checkFlags(countFlag(cmd, "n", 1, math.MaxInt), countFlag(cmd, "c", 0, n), countFlag(cmd, "k", 1, n)); err != nil {
						return err
					}
					_, err := runPassK(int(cmd.Int("n")), int(cmd.Int("c")), int(cmd.Int("k")), cmd.Bool("json"), cmd.Root().Writer)
					return err
				},
			},
			{
				Name:        "holm",
				Usage:       "Holm step-down adjustment of several p-values",
				ArgsUsage:   "P...",
				Description: "Adjusts the p-values of several claims tested together and says which\nare rejected at family-wise level alpha.\n\n" + exitCodesHelp,
				Flags:       []cli.Flag{jsonFlag, alpha},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					var ps []float64
					for _, a := range cmd.Args().Slice() {
						p, err := strconv.ParseFloat(a, 64)
						if err != nil || !(p >= 0 && p <= 1) {
							return usagef("holm: %q is not a p-value: want a number from 0 to 1", a)
						}
						ps = append(ps, p)
					}
					if len(ps) == 0 {
						return usagef("holm needs at least one p-value")
					}
					if err := alphaFlag(cmd); err != nil {
						return err
					}
					_, err := runHolm(ps, cmd.Float("alpha"), cmd.Bool("json"), cmd.Root().Writer)
					return err
				},
			},
		},
	}
}

// alphaFlag refuses an --alpha outside (0, 1) as a usage error naming the
// flag and the values it takes.
func alphaFlag(cmd *cli.Command) error {
	if a := cmd.Float("alpha"); !(a > 0 && a < 1) {
		return usagef("--alpha %g: want a significance level between 0 and 1, such as 0.05 for 95%% intervals", a)
	}
	return nil
}

// countFlag refuses an integer flag outside [lo, hi] as a usage error
// naming the flag and the range.
func countFlag(cmd *cli.Command, name string, lo, hi int) error {
	v := int(cmd.Int(name))
	switch {
	case v >= lo && v <= hi:
		return nil
	case hi == math.MaxInt:
		return usagef("--%s %d: want %d or more", name, v, lo)
	}
	return usagef("--%s %d: want %d to %d", name, v, lo, hi)
}

// checkFlags returns the first of the flag checks that failed.
func checkFlags(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

type mcnemarOptions struct {
	B, C, N int
	Alpha   float64
	JSON    bool
}

type mcnemarSummary struct {
	stats.McNemarResult
	N     int         `json:"n,omitempty"`
	Alpha float64     `json:"alpha"`
	MDE   stats.Value `json:"mde,omitzero"`
}

func runMcNemar(opts mcnemarOptions, w io.Writer) (*mcnemarSummary, error) {
	r, err := stats.McNemar(opts.B, opts.C)
	if err != nil {
		return nil, err
	}
	s := &mcnemarSummary{McNemarResult: r, N: opts.N, Alpha: opts.Alpha}
	if opts.N > 0 {
		if s.MDE, err = stats.MinDetectableEffect(opts.N, opts.B+opts.C, opts.Alpha, 0.8); err != nil {
			return nil, err
		}
	}
	return s, emit(w, opts.JSON, s, func(w io.Writer) error {
		t := newTable(w, "statistic", "value")
		t.Append("b, c", fmt.Sprintf("%d, %d", r.B, r.C))
		t.Append("exact p (two-sided)", fmt.Sprintf("%.6g", r.ExactP))
		t.Append("mid-p", fmt.Sprintf("%.6g", r.MidP))
		t.Append("chi-square", fmt.Sprintf("%.6g", r.ChiSq))
		t.Append("chi-square p", fmt.Sprintf("%.6g", r.ChiSqP))
		t.Append("chi-square (continuity corr.)", fmt.Sprintf("%.6g", r.ChiSqCC))
		t.Append("chi-square p (continuity corr.)", fmt.Sprintf("%.6g", r.ChiSqCCP))
		if opts.N > 0 {
			t.Append(fmt.Sprintf("min. detectable effect (n=%d, 80%% power, alpha=%g)", opts.N, opts.Alpha), fmt.Sprintf("%.4f", s.MDE))
		}
		return t.Render()
	})
}

type wilsonSummary struct {
	K              int            `json:"k"`
	N              int            `json:"n"`
	Alpha          float64        `json:"alpha"`
	Accuracy       float64        `json:"accuracy"`
	Wilson         stats.Interval `json:"wilson"`
	ClopperPearson stats.Interval `json:"clopper_pearson"`
}

func runWilson(k, n int, alpha float64, asJSON bool, w io.Writer) (*wilsonSummary, error) {
	wi, err := stats.Wilson(k, n, alpha)
	if err != nil {
		return nil, err
	}
	cp, err := stats.ClopperPearson(k, n, alpha)
	if err != nil {
		return nil, err
	}
	s := &wilsonSummary{K: k, N: n, Alpha: alpha, Accuracy: float64(k) / float64(n), Wilson: wi, ClopperPearson: cp}
	return s, emit(w, asJSON, s, func(w io.Writer) error {
		level := 100 * (1 - alpha)
		_, err := fmt.Fprintf(w, "accuracy %d/%d = %.4f\nWilson %g%%          [%.4f, %.4f]\nClopper-Pearson %g%% [%.4f, %.4f]\n",
			k, n, s.Accuracy, level, wi.Lo, wi.Hi, level, cp.Lo, cp.Hi)
		return err
	})
}

type passKSummary struct {
	N       int     `json:"n"`
	C       int     `json:"c"`
	K       int     `json:"k"`
	PassAtK float64 `json:"pass_at_k"`
}

func runPassK(n, c, k int, asJSON bool, w io.Writer) (*passKSummary, error) {
	p, err := stats.PassAtK(n, c, k)
	if err != nil {
		return nil, err
	}
	s := &passKSummary{N: n, C: c, K: k, PassAtK: p}
	return s, emit(w, asJSON, s, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "pass@%d = %.6g (unbiased estimator, n=%d samples, c=%d correct)\n", k, p, n, c)
		return err
	})
}

type holmSummary struct {
	P     []float64 `json:"p"`
	Alpha float64   `json:"alpha"`
	stats.HolmResult
}

func runHolm(ps []float64, alpha float64, asJSON bool, w io.Writer) (*holmSummary, error) {
	r, err := stats.Holm(ps, alpha)
	if err != nil {
		return nil, err
	}
	s := &holmSummary{P: ps, Alpha: alpha, HolmResult: r}
	return s, emit(w, asJSON, s, func(w io.Writer) error {
		t := newTable(w, "p", "Holm-adjusted p", fmt.Sprintf("rejected at %g", alpha))
		for i, p := range ps {
			t.Append(fmt.Sprintf("%.6g", p), fmt.Sprintf("%.6g", r.Adjusted[i]), fmt.Sprint(r.Reject[i]))
		}
		return t.Render()
	})
}
