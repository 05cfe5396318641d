package main

import (
	"context"

	"github.com/rlgate/rlgate/stats"
	"github.com/rlgate/rlgate/workflow/calc"
	"github.com/urfave/cli/v3"
)

// The stats calculators let a user recompute, from a paper's counts, every
// number rlgate prints; they read no ledger. This file holds the tests of
// several systems or claims (McNemar, Holm), cmd_stats_rates.go the rates
// of one system (intervals, pass@k).
func newStatsCommand() *cli.Command {
	alpha := &cli.FloatFlag{Name: "alpha", Value: stats.DefaultAlpha, Usage: "significance level (0.05 = 95% intervals)"}
	return &cli.Command{
		Name:  "stats",
		Usage: "small calculators for the paired statistics rlgate uses",
		Description: "Each subcommand computes one statistic from counts, as statsmodels does,\n" +
			"so any number in an rlgate report can be checked by hand.\n\n" + exitCodesHelp,
		Commands: []*cli.Command{newMcNemarCommand(alpha), newWilsonCommand(alpha), newPassKCommand(), newHolmCommand(alpha)},
	}
}

func newMcNemarCommand(alpha cli.Flag) *cli.Command {
	return &cli.Command{
		Name:  "mcnemar",
		Usage: "McNemar's test on discordant counts b and c",
		Description: "b = tasks only the first system solved, c = tasks only the second solved.\n" +
			"Prints the exact two-sided p, mid-p, and chi-square with and without\n" +
			"continuity correction; with --n, also the minimum detectable effect.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.IntFlag{Name: "b", Usage: "tasks only the first system solved", Required: true},
			&cli.IntFlag{Name: "c", Usage: "tasks only the second system solved", Required: true},
			&cli.IntFlag{Name: "n", Usage: "paired tasks in all (for the minimum detectable effect)"},
			alpha,
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := calc.McNemar(cmd.Int("b"), cmd.Int("c"), cmd.Int("n"), cmd.Float("alpha"))
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}

func newHolmCommand(alpha cli.Flag) *cli.Command {
	return &cli.Command{
		Name:        "holm",
		Usage:       "Holm step-down adjustment of several p-values",
		ArgsUsage:   "P...",
		Description: "Adjusts the p-values of several claims tested together and says which\nare rejected at family-wise level alpha.\n\n" + exitCodesHelp,
		Flags:       []cli.Flag{jsonFlag(), alpha},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			ps, err := calc.ParsePValues(cmd.Args().Slice())
			if err != nil {
				return err
			}
			s, err := calc.Holm(ps, cmd.Float("alpha"))
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
