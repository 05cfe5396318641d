package reproduce

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
)

// StageGrade is the stage of a grading run (grade.GradeTrajectories and
// rlgate grade record it so).
const StageGrade = "grade"

// reproduceGrading reproduces a grading of a rollout without a model
// server: the rollout's recorded trajectories are graded again, as a new
// grading run, with the recorded metric, mode, weights and grader
// options, on the dataset the rollout read (its tasks and gold must still
// have the recorded digests), and the outcomes are compared task by task.
// A grading of a predictions file (rlgate grade) names no rollout and is
// refused.
func reproduceGrading(ctx context.Context, l *ledger.Ledger, r ledger.Run) (runner.Reproduction, error) {
	b := runner.Reproduction{Original: r.Run, Stage: r.Stage}
	st, err := ledger.DecodeEntry[grade.TrajectoryStart](ctx, l, r.StartedSeq)
	if err != nil {
		return b, err
	}
	if st.Rollout == "" {
		b.Refused = "a grading of a predictions file (rlgate grade): it names no rollout whose trajectories could be graded again"
		return b, nil
	}
	ro, err := rollout.ReadStart(ctx, l, st.Rollout)
	if err != nil {
		return b, err
	}
	dataset := ro.Tasks
	if fi, err := os.Stat(dataset); err == nil && !fi.IsDir() {
		dataset = filepath.Dir(dataset)
	}
	g := grade.NewGrader(st.Options.Options(), nil)
	defer g.Close()
	b.Run = StagePrefix + r.Run + "-" + time.Now().UTC().Format("20060102T150405")
	_, err = grade.GradeTrajectories(ctx, l, g, grade.TrajectoryOptions{Rollout: st.Rollout, Dataset: dataset, Metric: st.Metric,
		Mode: st.Mode, K: st.K, Run: b.Run, Weights: st.Weights, AllowIncomplete: st.AllowIncomplete})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ledger.ErrRunExists) {
			return b, err
		}
		b.Run, b.Refused = "", err.Error()
		return b, nil
	}
	o, err := compareOutcomes(ctx, l, r.Run, b.Run)
	if err != nil {
		return b, err
	}
	b.Outputs = []runner.ReproducedOutput{o}
	b.Reproduced = o.Verdict == runner.OutputIdentical
	return b, nil
}

// compareOutcomes compares two gradings' outcomes task by task and sample
// by sample.
func compareOutcomes(ctx context.Context, l *ledger.Ledger, was, now string) (runner.ReproducedOutput, error) {
	o := runner.ReproducedOutput{Name: "outcomes", Kind: records.KindOutcomes, Verdict: runner.OutputIdentical}
	a, err := l.Outcomes(ctx, was)
	if err != nil {
		return o, err
	}
	b, err := l.Outcomes(ctx, now)
	if err != nil {
		return o, err
	}
	reward := func(p *float64) string {
		if p == nil {
			return "none"
		}
		return fmt.Sprint(*p)
	}
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("task %s sample %d: not in the original grading", b[i].TaskID, b[i].Sample)
		case i >= len(b):
			o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("task %s sample %d: not graded again", a[i].TaskID, a[i].Sample)
		case a[i].TaskID != b[i].TaskID || a[i].Sample != b[i].Sample:
			o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("outcome %d: task %s sample %d, graded again as task %s sample %d", i, a[i].TaskID, a[i].Sample, b[i].TaskID, b[i].Sample)
		case a[i].Correct != b[i].Correct || reward(a[i].Reward) != reward(b[i].Reward):
			o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("task %s sample %d: correct %t reward %s, graded again correct %t reward %s",
				a[i].TaskID, a[i].Sample, a[i].Correct, reward(a[i].Reward), b[i].Correct, reward(b[i].Reward))
		default:
			continue
		}
		return o, nil
	}
	return o, nil
}
