package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"

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
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "run", Usage: "run `ID`", Required: true},
			&cli.StringSliceFlag{Name: "key", Usage: "metric `KEY` to print (repeatable; default: all)"},
			&cli.BoolFlag{Name: "csv", Usage: "print key,step,value rows"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Bool("json") && cmd.Bool("csv") {
				return usagef("metrics: give --json or --csv, not both")
			}
			return runMetrics(ctx, ledgerDir(cmd), cmd.String("run"), cmd.StringSlice("key"), cmd.Bool("json"), cmd.Bool("csv"), cmd.Root().Writer)
		},
	}
}

// metricsOutput is what rlgate metrics --json prints.
type metricsOutput struct {
	Run    string                  `json:"run"`
	Series map[string][][2]jsonNum `json:"series"`
}

// jsonNum is a step or value as JSON holds it: a number, or the name of a
// non-finite value.
type jsonNum float64

func (v jsonNum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func runMetrics(ctx context.Context, dir, run string, keys []string, asJSON, asCSV bool, w io.Writer) error {
	series, keys, err := stage.Metrics(ctx, dir, run, keys)
	if err != nil {
		return err
	}
	out := metricsOutput{Run: run, Series: map[string][][2]jsonNum{}}
	for k, pts := range series {
		s := make([][2]jsonNum, len(pts))
		for i, p := range pts {
			s[i] = [2]jsonNum{jsonNum(p.Step), jsonNum(p.Value)}
		}
		out.Series[k] = s
	}
	if asCSV {
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"key", "step", "value"})
		for _, k := range keys {
			for _, p := range out.Series[k] {
				_ = cw.Write([]string{k, strconv.FormatInt(int64(p[0]), 10), strconv.FormatFloat(float64(p[1]), 'g', -1, 64)})
			}
		}
		cw.Flush()
		return cw.Error()
	}
	return emit(w, asJSON, out, func(w io.Writer) error {
		t := newTable(w, "key", "points", "steps", "first", "last")
		for _, k := range keys {
			s := out.Series[k]
			first, last := s[0], s[len(s)-1]
			_ = t.Append([]string{k, strconv.Itoa(len(s)), fmt.Sprintf("%d..%d", int64(first[0]), int64(last[0])),
				strconv.FormatFloat(float64(first[1]), 'g', 6, 64), strconv.FormatFloat(float64(last[1]), 'g', 6, 64)})
		}
		return t.Render()
	})
}
