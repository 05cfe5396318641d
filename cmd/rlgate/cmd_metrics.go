package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/stage"
	"github.com/urfave/cli/v3"
)

func newMetricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print the metric series a run recorded",
		Description: "Prints every point of the run's metric keys (or of each --key), per key in\n" +
			"step order (a step logged twice keeps both, in the order recorded), as a\n" +
			"table, --json ({\"run\", \"series\": {key: [[step, value], ...]}}; NaN and\n" +
			"infinities as the strings \"NaN\", \"Infinity\", \"-Infinity\") or --csv\n" +
			"(key,step,value). Every metrics source, a trainer log or a tracker run, reads\n" +
			"into the same series.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "run", Usage: "run `ID`", Required: true},
			&cli.StringSliceFlag{Name: "key", Usage: "metric `KEY` to print (repeatable; default: all)"},
			&cli.BoolFlag{Name: "csv", Usage: "print key,step,value rows"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Bool("json") && cmd.Bool("csv") {
				return usagef("metrics: give --json or --csv, not both")
			}
			series, keys, err := stage.Metrics(ctx, ledgerDir(cmd), cmd.String("run"), cmd.StringSlice("key"))
			if err != nil {
				return err
			}
			s := stage.NewSeries(cmd.String("run"), series, keys)
			if cmd.Bool("csv") {
				return s.WriteCSV(cmd.Root().Writer)
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
