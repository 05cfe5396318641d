package main

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/rlgate/rlgate/stats"
	"github.com/urfave/cli/v3"
)

// wilsonSummary is what stats wilson prints.
type wilsonSummary struct {
	K              int            `json:"k"`
	N              int            `json:"n"`
	Alpha          float64        `json:"alpha"`
	Accuracy       float64        `json:"accuracy"`
	Wilson         stats.Interval `json:"wilson"`
	ClopperPearson stats.Interval `json:"clopper_pearson"`
}

func newWilsonCommand(alpha cli.Flag) *cli.Command {
	return &cli.Command{
		Name:        "wilson",
		Usage:       "Wilson and Clopper-Pearson intervals for k correct of n",
		Description: "Prints the accuracy k/n with both two-sided intervals at level 1-alpha.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.IntFlag{Name: "k", Usage: "correct answers", Required: true},
			&cli.IntFlag{Name: "n", Usage: "tasks", Required: true},
			alpha,
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			k, n, a := int(cmd.Int("k")), int(cmd.Int("n")), cmd.Float("alpha")
			if err := checkFlags(countFlag(cmd, "n", 1, math.MaxInt), countFlag(cmd, "k", 0, n), alphaFlag(cmd)); err != nil {
				return err
			}
			wi, err := stats.Wilson(k, n, a)
			if err != nil {
				return err
			}
			cp, err := stats.ClopperPearson(k, n, a)
			if err != nil {
				return err
			}
			s := &wilsonSummary{K: k, N: n, Alpha: a, Accuracy: float64(k) / float64(n), Wilson: wi, ClopperPearson: cp}
			return emit(cmd.Root().Writer, cmd.Bool("json"), s, func(w io.Writer) error {
				level := 100 * (1 - a)
				_, err := fmt.Fprintf(w, "accuracy %d/%d = %.4f\nWilson %g%%          [%.4f, %.4f]\nClopper-Pearson %g%% [%.4f, %.4f]\n",
					k, n, s.Accuracy, level, wi.Lo, wi.Hi, level, cp.Lo, cp.Hi)
				return err
			})
		},
	}
}

// passKSummary is what stats passk prints.
type passKSummary struct {
	N       int     `json:"n"`
	C       int     `json:"c"`
	K       int     `json:"k"`
	PassAtK float64 `json:"pass_at_k"`
}

func newPassKCommand() *cli.Command {
	return &cli.Command{
		Name:        "passk",
		Usage:       "unbiased pass@k from n samples with c correct",
		Description: "Prints 1 - C(n-c,k)/C(n,k), the unbiased estimator (not 'any of k').\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.IntFlag{Name: "n", Usage: "samples per task", Required: true},
			&cli.IntFlag{Name: "c", Usage: "correct samples", Required: true},
			&cli.IntFlag{Name: "k", Usage: "k of pass@k", Required: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			n, c, k := int(cmd.Int("n")), int(cmd.Int("c")), int(cmd.Int("k"))
			if err := checkFlags(countFlag(cmd, "n", 1, math.MaxInt), countFlag(cmd, "c", 0, n), countFlag(cmd, "k", 1, n)); err != nil {
				return err
			}
			p, err := stats.PassAtK(n, c, k)
			if err != nil {
				return err
			}
			s := &passKSummary{N: n, C: c, K: k, PassAtK: p}
			return emit(cmd.Root().Writer, cmd.Bool("json"), s, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "pass@%d = %.6g (unbiased estimator, n=%d samples, c=%d correct)\n", k, p, n, c)
				return err
			})
		},
	}
}
