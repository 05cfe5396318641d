package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strconv"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/urfave/cli/v3"
)

func newImportRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "import-run",
		Usage:     "record a finished run that a tracker recorded elsewhere (W&B, SwanLab, MLflow), executing nothing",
		ArgsUsage: "PATH[:FORMAT]",
		Description: "Reads the run at PATH (a W&B run directory or run-*.wandb file, a SwanLab run\n" +
			"directory (0.6 backup.swanlab, or 0.3-0.5 logs/ with ../runs.swanlab, read on\n" +
			"a copy) or backup.swanlab, an MLflow run directory <root>/<experiment>/<run>,\n" +
			"or any --metrics file of rlgate run) and records it as a run of --stage:\n" +
			"its metric points, its config (secrets redacted as rlgate run redacts them),\n" +
			"summary and console output as artifacts by digest, the start and end times\n" +
			"and end state the tracker recorded, and --in/--out digested as rlgate run\n" +
			"digests them. FORMAT is wandb, swanlab, mlflow or any metrics format; auto or\n" +
			"none: detected (recorded in run.end metric_formats).\n\n" +
			"The run is ok only when the tracker recorded a successful end: a W&B exit\n" +
			"record with code 0, a SwanLab footer with success, MLflow status FINISHED. A\n" +
			"run without one (killed, or still running), a non-zero exit or a trainer log\n" +
			"(which records no end) is recorded as failed, and rlgate exits 3. A truncated\n" +
			"or corrupt record file keeps every record before the fault and records a\n" +
			"finding (run.end metric_findings) for the training audit. A file that\n" +
			"cannot be read at all is an error and records nothing.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "stage", Validator: ledger.CheckName, Usage: "stage `NAME` (sft, rl1, ...)", Required: true},
			&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "run `ID` (default: STAGE-TIME-XXXX)"},
			&cli.StringSliceFlag{Name: "in", Usage: "input `NAME=PATH` (repeatable)"},
			&cli.StringSliceFlag{Name: "out", Usage: "output `NAME=PATH` (repeatable)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("import-run: give one PATH[:FORMAT]")
			}
			spec := runner.ImportSpec{Stage: cmd.String("stage"), Run: cmd.String("run")}
			path, format, err := metrics.ParseSpec(cmd.Args().First())
			if err != nil {
				return usagef("import-run %q: %v", cmd.Args().First(), err)
			}
			spec.Source = runner.MetricFile{Path: path, Format: format}
			if spec.Inputs, err = namedPaths("in", cmd.StringSlice("in")); err != nil {
				return err
			}
			if spec.Outputs, err = namedPaths("out", cmd.StringSlice("out")); err != nil {
				return err
			}
			return runImport(ctx, ledgerDir(cmd), spec, cmd.Bool("json"), cmd.Root().Writer)
		},
	}
}

func runImport(ctx context.Context, dir string, spec runner.ImportSpec, asJSON bool, w io.Writer) error {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return err
	}
	defer l.Close()
	res, err := runner.Import(ctx, l, spec)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("import-run %s: %w. Try: the path of a run directory or file, e.g. wandb/run-<date>-<id>", spec.Source.Path, err)
	}
	if err != nil {
		return fmt.Errorf("import-run %s: %w", spec.Source.Path, err)
	}
	err = emit(w, asJSON, res, func(w io.Writer) error {
		fmt.Fprintf(w, "rlgate: imported %s as run %s (stage %s): %s", spec.Source.Path, res.Run, res.Stage, res.Status)
		if res.Reason != "" {
			fmt.Fprintf(w, ": %s", res.Reason)
		}
		fmt.Fprintf(w, "\nrlgate: entries %d..%d, %d metric points read as %s\n", res.StartSeq, res.EndSeq, res.MetricPoints, res.MetricFormats[spec.Source.Path])
		for _, f := range res.MetricFindings {
			fmt.Fprintf(w, "rlgate: finding: %s\n", f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if res.Status != records.StatusOK {
		return checkFailed{fmt.Sprintf("imported run %s is %s: %s", res.Run, res.Status, res.Reason)}
	}
	return nil
}

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
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := l.RunStatus(ctx, run); err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("metrics: no run %q in the ledger. Try: rlgate runs", run)
		}
		return err
	}
	if len(keys) == 0 {
		if keys, err = l.MetricKeys(ctx, run); err != nil {
			return err
		}
	}
	out := metricsOutput{Run: run, Series: map[string][][2]jsonNum{}}
	for _, k := range keys {
		pts, _, err := l.Series(ctx, run, k)
		if err != nil {
			return err
		}
		if len(pts) == 0 {
			return fmt.Errorf("metrics: run %s recorded no key %q. Try: rlgate metrics --run %s (all keys)", run, k, run)
		}
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
