package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/workflow/evaluate"
	"github.com/urfave/cli/v3"
)

func newGradeCommand() *cli.Command {
	return &cli.Command{
		Name:  "grade",
		Usage: "grade prediction files offline, as the official BIRD and Spider evaluators do",
		Description: "Pairs each prediction with the task at the same position in the source\n" +
			"dataset, executes prediction and gold read-only, compares them under --metric\n" +
			"(bird: set equality as evaluation_ex.py; spider: the test-suite's\n" +
			"eval_exec_match with its defaults; strict: ordered multisets with exact\n" +
			"decimals; bird-softf1: evaluation_f1.py's Soft-F1 per item, beside the bird\n" +
			"verdict of the same rows; spider-em: evaluation.py's exact set match,\n" +
			"nothing executed, unparsable predictions scored 0 and counted), prints\n" +
			"the accuracy (and Soft-F1) overall and per\n" +
			"difficulty, and records an evaluation\n" +
			"run with one outcome per task. Several --predictions share one gold cache,\n" +
			"so each gold query runs once.\n\n" +
			"Before grading, every database is hashed (once per command) and checked\n" +
			"against the digest the import recorded: a missing database or one whose\n" +
			"bytes changed is an error naming the file (and both digests), unless\n" +
			"--allow-db-mismatch, which is then recorded in the run. The run records the\n" +
			"database digests and the SQLite version it graded with. Progress goes to\n" +
			"stderr. --json prints a list with one summary per --predictions, in order.\n\n" +
			"Each query runs read-only under --query-timeout (default: 30s for\n" +
			"prediction and gold together under bird, as evaluation_ex.py; 60s a\n" +
			"query under spider, as exec_eval.py, and under strict), its result cut at\n" +
			"a million rows or 32 MiB, its values at 8 MiB, and SQLite's heap at\n" +
			"128 MiB. A prediction that errs, times out or crosses a limit counts as\n" +
			"incorrect and stays in the denominator, as in the official evaluators.\n" +
			"The time limits and result caps used are recorded with the run.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringSliceFlag{Name: "predictions", Required: true, Usage: "predictions `FILE` (repeatable)"},
			&cli.StringFlag{Name: "format", Required: true, Usage: "`FORMAT`: bird-json, spider-txt or jsonl"},
			&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import"},
			&cli.StringFlag{Name: "db-root", Usage: "`DIR` of the databases (default: the one recorded at import)"},
			&cli.StringFlag{Name: "metric", Required: true, Usage: "`METRIC`: " + grade.MetricList()},
			&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "run `ID` (one --predictions only; default from the file name and digest)"},
			&cli.DurationFlag{Name: "query-timeout", Usage: "`DURATION` a query may run (under bird: prediction and gold together; default: the official evaluator's)"},
			&cli.BoolFlag{Name: "lenient", Usage: "read defects the official readers tolerate (a BIRD value that is not a string or lacks the separator) their way, as warnings, instead of refusing the file"},
			&cli.BoolFlag{Name: "allow-db-mismatch", Usage: "grade on databases whose digest differs from the one recorded at import (recorded in the run); by default refused"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out, err := evaluate.GradeFiles(ctx, ledgerDir(cmd), evaluate.GradeRequest{Predictions: cmd.StringSlice("predictions"), Format: cmd.String("format"),
				Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"), Metric: cmd.String("metric"), Run: cmd.String("run"), QueryTimeout: cmd.Duration("query-timeout"),
				Lenient: cmd.Bool("lenient"), AllowDBMismatch: cmd.Bool("allow-db-mismatch"), Progress: cmd.Root().ErrWriter, Terminal: isTerminal(cmd.Root().ErrWriter)})
			if err != nil {
				return err
			}
			// One shape however many files: a list of summaries, in
			// --predictions order.
			return emit(cmd, out, func(w io.Writer) error { return evaluate.WriteGrades(w, out) })
		},
	}
}
