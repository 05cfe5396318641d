package main

import (
	"context"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/workflow/evaluate"
	"github.com/urfave/cli/v3"
)

func newEvalCommand() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "roll out, then grade the frozen trajectories: rollout and grade in one command",
		Description: "Runs rlgate rollout with the same flags (an interrupted run is resumed, a\n" +
			"finished one is not played again). Only once every trajectory of the run is\n" +
			"frozen does it read the gold (gold.jsonl beside the tasks) and grade each\n" +
			"episode's final SQL under --metric, as rlgate grade does. --mode greedy grades\n" +
			"sample 0; majority executes every sample's final SQL and keeps the largest\n" +
			"group of equal result sets (ties to the earliest sample; a failed query does\n" +
			"not vote); passk counts a task correct when any sample is and reports the\n" +
			"unbiased estimator pass@k = 1 - C(n-c,k)/C(n,k) per task and on average.\n" +
			"The grading is recorded as its own run (default <run>.<metric>-<mode>),\n" +
			"opened after the rollout's end, with one outcome per task.\n\n" +
			"A rollout with unfinished episodes (transport failures) is not graded: eval\n" +
			"exits 1, and the same command against a working endpoint finishes it. With\n" +
			"--allow-incomplete it is graded as it is: each unfinished sample counts as\n" +
			"wrong (pred-error), every task stays in the denominator, and the summary,\n" +
			"--json (incomplete, unfinished_episodes) and the grading run's start and end\n" +
			"entries (allow_incomplete, unfinished_episodes) say so.\n\n" +
			rolloutHelp + exitCodesHelp,
		Flags: append([]cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "metric", Required: true, Usage: "`METRIC`: " + grade.MetricList()},
			&cli.StringFlag{Name: "mode", Value: grade.ModeGreedy, Usage: "`MODE`: greedy, majority or passk"},
			&cli.IntFlag{Name: "k", Value: 1, Usage: "`K` of pass@k (mode passk; at most --n)"},
			&cli.StringFlag{Name: "grade-run", Validator: ledger.CheckName, Usage: "grading run `ID` (default <run>.<metric>-<mode>)"},
			&cli.BoolFlag{Name: "allow-incomplete", Usage: "grade a rollout whose unfinished episodes (transport failures) count as wrong; recorded"},
			&cli.BoolFlag{Name: "allow-db-mismatch", Usage: "play and grade on databases whose digest differs from the one recorded at import (recorded in the grading run); by default refused"},
			&cli.StringSliceFlag{Name: "reward-weight", Usage: "reward component weight `NAME=W` (execution, soft_f1, format, parses, schema_jaccard, bigram; repeatable; default execution=1)"},
		}, rolloutFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			po, err := playOptionsFrom(cmd)
			if err != nil {
				return err
			}
			weights, err := evaluate.ParseWeights(cmd.StringSlice("reward-weight"))
			if err != nil {
				return err
			}
			s, err := evaluate.Eval(ctx, evaluate.EvalOptions{PlayOptions: po, Metric: grade.Metric(cmd.String("metric")), Mode: cmd.String("mode"), K: cmd.Int("k"), GradeRun: cmd.String("grade-run"),
				Weights: weights, AllowIncomplete: cmd.Bool("allow-incomplete"), AllowDBMismatch: cmd.Bool("allow-db-mismatch")})
			if err != nil {
				if s != nil && !cmd.Bool("json") {
					evaluate.WriteRollout(cmd.Root().Writer, s.RolloutSummary)
				}
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
