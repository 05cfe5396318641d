package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
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
		Flags: append([]cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "metric", Required: true, Usage: "`METRIC`: " + grade.MetricList()},
			&cli.StringFlag{Name: "mode", Value: grade.ModeGreedy, Usage: "`MODE`: greedy, majority or passk"},
			&cli.IntFlag{Name: "k", Value: 1, Usage: "`K` of pass@k (mode passk; at most --n)"},
			&cli.StringFlag{Name: "grade-run", Validator: ledger.CheckName, Usage: "grading run `ID` (default <run>.<metric>-<mode>)"},
			&cli.BoolFlag{Name: "allow-incomplete", Usage: "grade a rollout whose unfinished episodes (transport failures) count as wrong; recorded"},
			&cli.BoolFlag{Name: "allow-db-mismatch", Usage: "play and grade on databases whose digest differs from the one recorded at import (recorded in the grading run); by default refused"},
			&cli.StringSliceFlag{Name: "reward-weight", Usage: "reward component weight `NAME=W` (execution, soft_f1, format, parses, schema_jaccard, bigram; repeatable; default execution=1)"},
		}, rolloutFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			ro, err := rolloutOptionsFrom(cmd)
			if err != nil {
				return err
			}
			m, err := grade.ParseMetric(cmd.String("metric"))
			if err != nil {
				return usagef("--metric: %v", err)
			}
			if !m.Executes() {
				return usagef("--metric %s compares parses, not results, so it cannot vote, reward or pick samples. Try: rlgate grade --metric %s on a predictions file", m, m)
			}
			weights, err := parseWeights(cmd.StringSlice("reward-weight"))
			if err != nil {
				return err
			}
			o := evalOptions{rolloutOptions: ro, Metric: m, Mode: cmd.String("mode"), K: cmd.Int("k"), GradeRun: cmd.String("grade-run"), Weights: weights,
				AllowIncomplete: cmd.Bool("allow-incomplete"), AllowDBMismatch: cmd.Bool("allow-db-mismatch")}
			_, err = runEval(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

type evalOptions struct {
	rolloutOptions
	Metric   grade.Metric
	Mode     string
	K        int
	GradeRun string
	Weights  grade.Weights
	// AllowIncomplete grades a rollout left with unfinished episodes.
	AllowIncomplete bool
	// AllowDBMismatch: see FileOptions in package grade.
	AllowDBMismatch bool
}

// evalSummary is grade's summary of the trajectories, with the rollout's
// beside it.
type evalSummary struct {
	*grade.TrajectorySummary
	RolloutSummary *rollout.Summary `json:"rollout_summary"`
}

func runEval(ctx context.Context, o evalOptions, w io.Writer) (*evalSummary, error) {
	ro, src, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if src.Dir == "" {
		return nil, usagef("eval: --tasks must be a directory written by rlgate data import, holding the gold beside the tasks")
	}
	n := ro.Protocol.Sampling.N
	if err := grade.CheckMode(o.Mode, n, o.K); err != nil {
		return nil, usagef("%v. Try: --mode greedy; majority with --n 2 or more; passk with --k from 1 to --n", err)
	}
	dbs, err := checkTaskDatabases(ctx, src, o.AllowDBMismatch, o.Progress)
	if err != nil {
		return nil, err
	}

	l, err := ledger.Open(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	rs, err := rollout.Run(ctx, l, ro)
	if err != nil && !(o.AllowIncomplete && errors.Is(err, rollout.ErrIncomplete)) {
		if rs != nil && !o.JSON {
			printRolloutSummary(w, rs)
		}
		if errors.Is(err, rollout.ErrIncomplete) {
			err = fmt.Errorf("%w; or grade it as it is with --allow-incomplete", err)
		}
		return nil, err
	}
	g := grade.NewGrader(grade.Options{}, nil)
	defer g.Close()
	ts, err := grade.GradeTrajectories(ctx, l, g, grade.TrajectoryOptions{Rollout: o.Run, Dataset: src.Dir, DBRoot: o.DBRoot,
		Metric: o.Metric, Mode: o.Mode, K: o.K, Run: o.GradeRun, Weights: o.Weights, AllowIncomplete: o.AllowIncomplete,
		AllowDBMismatch: o.AllowDBMismatch, Progress: o.Progress, Databases: dbs})
	if err != nil {
		return nil, err
	}
	s := &evalSummary{TrajectorySummary: ts, RolloutSummary: rs}
	return s, emit(w, o.JSON, s, func(w io.Writer) error {
		printRolloutSummary(w, rs)
		if ts.Incomplete {
			fmt.Fprintf(w, "graded over an incomplete rollout: %d of %d episodes unfinished, each counted wrong (--allow-incomplete)\n",
				ts.Unfinished, rs.Tasks*rs.Samples)
		}
		desc := fmt.Sprintf("rollout %s, %s", ts.Rollout, ts.Mode)
		if ts.Mode == grade.ModePassK {
			desc += fmt.Sprintf(" (any of %d samples)", n)
		}
		printGradeSummary(w, desc, ts)
		if ts.PassAtK != nil {
			fmt.Fprintf(w, "pass@%d %.2f%% (unbiased estimator over %d samples per task)\n", ts.K, *ts.PassAtK, n)
		}
		return nil
	})
}

// parseWeights reads NAME=W pairs into reward weights by their JSON names;
// none given leaves the zero value, which grading takes as the default.
func parseWeights(pairs []string) (grade.Weights, error) {
	m := map[string]float64{}
	for _, p := range pairs {
		name, val, ok := strings.Cut(p, "=")
		w, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil {
			return grade.Weights{}, usagef("--reward-weight %q: want NAME=NUMBER", p)
		}
		m[name] = w
	}
	var weights grade.Weights
	if len(m) == 0 {
		return weights, nil
	}
	raw, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&weights); err != nil {
		return weights, usagef("--reward-weight: %v (names: execution, soft_f1, format, parses, schema_jaccard, bigram)", err)
	}
	return weights, nil
}
