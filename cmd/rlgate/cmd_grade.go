package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
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
		Flags: []cli.Flag{jsonFlag,
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
			m, err := grade.ParseMetric(cmd.String("metric"))
			if err != nil {
				return usagef("--metric %q: want %s", cmd.String("metric"), grade.MetricList())
			}
			if f := cmd.String("format"); !slices.Contains(grade.Formats, f) {
				return usagef("--format %q: want %s", f, strings.Join(grade.Formats, ", "))
			}
			timeout := cmd.Duration("query-timeout")
			if timeout < 0 {
				return usagef("--query-timeout %s: want a positive duration", timeout)
			}
			preds := cmd.StringSlice("predictions")
			if cmd.String("run") != "" && len(preds) > 1 {
				return usagef("--run names one run; give one --predictions")
			}
			var files []grade.FileOptions
			for _, p := range preds {
				files = append(files, grade.FileOptions{Predictions: p, Format: cmd.String("format"), Dataset: cmd.String("tasks"),
					DBRoot: cmd.String("db-root"), Metric: m, Run: cmd.String("run"), Lenient: cmd.Bool("lenient"),
					AllowDBMismatch: cmd.Bool("allow-db-mismatch"), Progress: cmd.Root().ErrWriter, Terminal: isTerminal(cmd.Root().ErrWriter)})
			}
			// Zero leaves each metric its official default.
			opts := grade.Options{BirdBudget: timeout, QueryTimeout: timeout}
			_, err = runGrade(ctx, ledgerDir(cmd), opts, files, cmd.Bool("json"), cmd.Root().Writer)
			return err
		},
	}
}

// runGrade grades each file in turn with one grader, so gold results are
// computed once for all of them.
func runGrade(ctx context.Context, dir string, opts grade.Options, files []grade.FileOptions, asJSON bool, w io.Writer) ([]*grade.FileSummary, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	g := grade.NewGrader(opts, grade.NewGoldCache())
	defer g.Close()
	var out []*grade.FileSummary
	for _, f := range files {
		s, err := grade.GradeFile(ctx, l, g, f)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	// One shape however many files: a list of summaries, in --predictions
	// order.
	return out, emit(w, asJSON, out, func(w io.Writer) error {
		for _, s := range out {
			printGradeSummary(w, s.Predictions, s)
		}
		return nil
	})
}

// printGradeSummary prints a grading under title: the file or rollout graded.
func printGradeSummary[I grade.SummaryItem](w io.Writer, title string, s *grade.Summary[I]) {
	fmt.Fprintf(w, "%s  (metric %s, run %s)\n", title, s.Metric, s.Run)
	for _, wn := range s.Warnings {
		fmt.Fprintf(w, "  warning: %s: %s\n", wn.Where, wn.Msg)
	}
	if len(s.ByDifficulty) > 0 {
		order := grade.DifficultyOrder(s.ByDifficulty)
		header := []any{""}
		counts, accs := []any{"count"}, []any{"accuracy"}
		for _, k := range order {
			b := s.ByDifficulty[k]
			header = append(header, k)
			counts = append(counts, fmt.Sprint(b.Total))
			accs = append(accs, fmt.Sprintf("%.2f", b.EX))
		}
		header = append(header, "total")
		counts = append(counts, fmt.Sprint(s.Total))
		accs = append(accs, fmt.Sprintf("%.2f", s.EX))
		t := newTable(w, header...)
		t.Append(counts...)
		if s.Score != nil {
			scores := []any{scoreName(s.Metric)}
			for _, k := range order {
				scores = append(scores, fmt.Sprintf("%.2f", *s.ByDifficulty[k].Score))
			}
			t.Append(append(scores, fmt.Sprintf("%.2f", *s.Score))...)
		}
		t.Append(accs...)
		t.Render()
	}
	if s.Score != nil {
		fmt.Fprintf(w, "%s %.2f%%; ", scoreName(s.Metric), *s.Score)
	}
	accuracy := "execution accuracy"
	if s.Metric == grade.MetricSpiderEM {
		accuracy = "exact match accuracy"
	}
	fmt.Fprintf(w, "%s %.2f%% (%d/%d)", accuracy, s.EX, s.Correct, s.Total)
	if s.Unparsed > 0 {
		fmt.Fprintf(w, "; %d predictions the official parser cannot parse (scored 0; each item's error says why)", s.Unparsed)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "; %d items without a database not graded", s.Skipped)
	}
	if d := s.Databases; d != nil && len(d.Mismatches) > 0 {
		fmt.Fprintf(w, "; graded on %d DATABASES THAT DIFFER FROM THE IMPORT (--allow-db-mismatch)", len(d.Mismatches))
	}
	if s.GoldDefects > 0 {
		fmt.Fprintf(w, "; %d GOLD DEFECTS (gold query failed; scored 0)", s.GoldDefects)
	}
	if s.Fragile > 0 {
		fmt.Fprintf(w, "\n%d fragile verdicts: they rest on a float's last digits or on the order SQLite adds floats in, which another SQLite may do differently (items flagged \"fragile\", with \"fragile_reason\", in --json)", s.Fragile)
	}
	if d := s.Databases; d != nil {
		fmt.Fprintf(w, "\n%d databases checked against the import; SQLite %s", len(d.Digests), d.SQLiteVersion)
	}
	fmt.Fprintf(w, "\nrecorded entries %d..%d\n", s.StartSeq, s.EndSeq)
}

// scoreName is what a metric's item scores are called in a summary.
func scoreName(m grade.Metric) string {
	if m == grade.MetricBirdSoftF1 {
		return "Soft-F1"
	}
	return "score"
}

// checkTaskDatabases checks the databases a rollout or an evaluation runs
// on against the digests its import recorded (grade.CheckDatabases). A
// tasks.jsonl given without its import directory has no recorded digests
// and is not checked.
func checkTaskDatabases(ctx context.Context, src *dataset.TaskSource, allowMismatch bool, progress io.Writer) (*grade.DatabaseCheck, error) {
	if src.Dir == "" {
		return nil, nil
	}
	man, err := dataset.ReadManifest(src.Dir)
	if err != nil {
		return nil, err
	}
	return grade.CheckDatabases(ctx, man, src.DBRoot, allowMismatch, progress)
}
