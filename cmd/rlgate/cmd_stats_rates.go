package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/calc"
	"github.com/urfave/cli/v3"
)

func newWilsonCommand(alpha cli.Flag) *cli.Command {
	return &cli.Command{
		Name:        "wilson",
		Usage:       "Wilson and Clopper-Pearson intervals for k correct of n",
		Description: "Prints the accuracy k/n with both two-sided intervals at level 1-alpha.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.IntFlag{Name: "k", Usage: "correct answers", Required: true},
			&cli.IntFlag{Name: "n", Usage: "tasks", Required: true},
			alpha,
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := calc.Wilson(cmd.Int("k"), cmd.Int("n"), cmd.Float("alpha"))
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}

func newPassKCommand() *cli.Command {
	return &cli.Command{
		Name:        "passk",
		Usage:       "unbiased pass@k from n samples with c correct",
		Description: "Prints 1 - C(n-c,k)/C(n,k), the unbiased estimator (not 'any of k').\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.IntFlag{Name: "n", Usage: "samples per task", Required: true},
			&cli.IntFlag{Name: "c", Usage: "correct samples", Required: true},
			&cli.IntFlag{Name: "k", Usage: "k of pass@k", Required: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := calc.PassK(cmd.Int("n"), cmd.Int("c"), cmd.Int("k"))
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
