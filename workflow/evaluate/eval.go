package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
)

// EvalOptions are a rollout's, with how its trajectories are graded.
type EvalOptions struct {
	PlayOptions
	Metric   grade.Metric // an executing metric (Metric.Executes)
	Mode     string       // grade.ModeGreedy, ModeMajority or ModePassK
	K        int          // of pass@k
	GradeRun string       // empty: <run>.<metric>-<mode>
	Weights  grade.Weights
	// AllowIncomplete grades a rollout left with unfinished episodes.
	AllowIncomplete bool
	// AllowDBMismatch: see FileOptions in package grade.
	AllowDBMismatch bool
}

// EvalSummary is grade's summary of the trajectories, with the rollout's
// beside it.
type EvalSummary struct {
	*grade.TrajectorySummary
	RolloutSummary *rollout.Summary `json:"rollout_summary"`
}

// Eval checks the mode against the samples and the databases against the
// import (once, for the rollout and the grading alike), plays the rollout
// and grades its frozen trajectories as a grading run. A rollout with
// unfinished episodes is not graded unless o.AllowIncomplete; then each
// unfinished sample counts wrong and the grading records it. When the
// rollout does not end in a state to grade, the error comes back with a
// summary holding only the rollout's (nil when nothing was played).
func Eval(ctx context.Context, o EvalOptions) (*EvalSummary, error) {
	if _, err := grade.ParseMetric(string(o.Metric)); err != nil {
		return nil, usagef("--metric: %v", err)
	}
	if !o.Metric.Executes() {
		return nil, usagef("--metric %s compares parses, not results, so it cannot vote, reward or pick samples. Try: rlgate grade --metric %s on a predictions file", o.Metric, o.Metric)
	}
	ro, src, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if src.Dir == "" {
		return nil, usagef("eval: --tasks must be a directory written by rlgate data import, holding the gold beside the tasks")
	}
	if err := grade.CheckMode(o.Mode, ro.Protocol.Sampling.N, o.K); err != nil {
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
	rs, err := rollout.Play(ctx, l, ro)
	if err != nil && !(o.AllowIncomplete && errors.Is(err, rollout.ErrIncomplete)) {
		if errors.Is(err, rollout.ErrIncomplete) {
			err = fmt.Errorf("%w; or grade it as it is with --allow-incomplete", err)
		}
		if rs == nil {
			return nil, err
		}
		return &EvalSummary{RolloutSummary: rs}, err
	}
	g := grade.NewGrader(grade.Options{}, nil)
	defer g.Close()
	ts, err := grade.GradeTrajectories(ctx, l, g, grade.TrajectoryOptions{Rollout: o.Run, Dataset: src.Dir, DBRoot: o.DBRoot,
		Metric: o.Metric, Mode: o.Mode, K: o.K, Run: o.GradeRun, Weights: o.Weights, AllowIncomplete: o.AllowIncomplete,
		AllowDBMismatch: o.AllowDBMismatch, Progress: o.Progress, Databases: dbs})
	if err != nil {
		return nil, err
	}
	return &EvalSummary{TrajectorySummary: ts, RolloutSummary: rs}, nil
}

// ParseWeights reads --reward-weight's NAME=W pairs into reward weights by
// their JSON names; none given leaves the zero value, which grading takes
// as the default. A pair that is not one, or an unknown name, is a
// usage.Error.
func ParseWeights(pairs []string) (grade.Weights, error) {
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
