package audit

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
)

// The checks of the training audit.
const (
	CheckRunOK          = "run-ok"          // the stage ended ok
	CheckMetricFindings = "metric-findings" // the stage's metrics files were read without problems
	CheckOptimizerSteps = "optimizer-steps" // at least one optimizer step is logged
	CheckLearningRate   = "learning-rate"   // lr > 0 for a trained run, lr = 0 for the No-update control
)

// Series is one metric of a run found under a trainer's key, with the
// entry behind each point.
type Series struct {
	Key    string
	Points []ledger.MetricPoint
	Seqs   []int64
}

// CanonSeries returns the first key of any trainer's table for c that the
// run logged, or nil.
func CanonSeries(ctx context.Context, l *ledger.Ledger, run string, c metrics.Canon) (*Series, error) {
	for _, t := range metrics.Trainers {
		for _, k := range metrics.Keys(t, c) {
			pts, seqs, err := l.Series(ctx, run, k)
			if err != nil {
				return nil, err
			}
			if len(pts) > 0 {
				return &Series{Key: k, Points: pts, Seqs: seqs}, nil
			}
		}
	}
	return nil, nil
}

// lrParam returns the learning rate the run was given as a parameter
// (lr, learning_rate, or a dotted name ending in one), if any.
func lrParam(params map[string]string) (string, float64, bool) {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		last := k[strings.LastIndex(k, ".")+1:]
		if last != "lr" && last != "learning_rate" {
			continue
		}
		if v, err := strconv.ParseFloat(params[k], 64); err == nil {
			return k, v, true
		}
	}
	return "", 0, false
}

// Training checks that each labelled stage run trained: it ended ok, it
// logged at least one optimizer step, and its learning rate was above 0,
// except for the No-update control, whose every logged learning rate must
// be 0. The learning rate comes from the ingested metrics (the trainer's
// key for it) and, when none was logged, from a parameter named lr or
// learning_rate.
func Training(ctx context.Context, l *ledger.Ledger, s Subjects) (*Report, error) {
	r := newReport(AuditTraining, s)
	trains, err := loadTrains(ctx, l, s.Train)
	if err != nil {
		return nil, err
	}
	if len(trains) == 0 {
		return nil, fmt.Errorf("audit training: name the training runs (train)")
	}
	for _, t := range trains {
		end := []int64{t.run.StartedSeq}
		if t.run.EndedSeq != nil {
			end = []int64{*t.run.EndedSeq}
		}
		if err := runEnded(ctx, l, r, t, end); err != nil {
			return nil, err
		}

		steps, err := CanonSeries(ctx, l, t.Run, metrics.OptimizerStep)
		if err != nil {
			return nil, err
		}
		lr, err := CanonSeries(ctx, l, t.Run, metrics.LearningRate)
		if err != nil {
			return nil, err
		}
		switch {
		case steps != nil && maxValue(steps.Points) >= 1:
			i := slices.IndexFunc(steps.Points, func(p ledger.MetricPoint) bool { return p.Value >= 1 })
			r.pass(CheckOptimizerSteps, nil, []int64{steps.Seqs[i]}, "%s: %s reached %g", t.Label, steps.Key, maxValue(steps.Points))
		case steps == nil && lr != nil:
			r.pass(CheckOptimizerSteps, nil, []int64{lr.Seqs[0]}, "%s: %d steps logged %s", t.Label, len(lr.Points), lr.Key)
		case steps != nil:
			r.fail(CheckOptimizerSteps, nil, steps.Seqs, "%s: %s never reached 1: no optimizer step was taken", t.Label, steps.Key)
		default:
			r.fail(CheckOptimizerSteps, nil, end, "%s: stage run %s logged no optimizer step (no step or learning-rate metric). Try: rlgate run --metrics FILE:FORMAT", t.Label, t.Run)
		}
		learningRate(r, t, lr)
	}
	return r, nil
}

// runEnded adds the run-ok and metric-findings findings of one run, from
// its run.end entry (end): its status with the stage's exit code and the
// reason it ended so, and every problem rlgate run found in its metrics
// files, each a warning that did not change the status but leaves the
// metrics the other checks read in doubt.
func runEnded(ctx context.Context, l *ledger.Ledger, r *Report, t *trainRun, end []int64) error {
	var body runner.EndBody
	if t.run.EndedSeq != nil {
		if err := l.DecodeBody(ctx, *t.run.EndedSeq, &body); err != nil {
			return fmt.Errorf("training %s=%s: %w", t.Label, t.Run, err)
		}
	}
	if t.run.Status == records.StatusOK {
		r.pass(CheckRunOK, nil, end, "%s: stage run %s ended ok", t.Label, t.Run)
	} else {
		how := string(t.run.Status)
		if t.run.ExitCode != nil {
			how += fmt.Sprintf(" (exited %d)", *t.run.ExitCode)
		}
		// The runner's reason for a stage's own exit is "exit status N",
		// which the exit code already says.
		if body.Reason != "" && (t.run.ExitCode == nil || body.Reason != fmt.Sprintf("exit status %d", *t.run.ExitCode)) {
			how += ": " + body.Reason
		}
		r.fail(CheckRunOK, nil, end, "%s: stage run %s is %s", t.Label, t.Run, how)
	}
	switch {
	case t.run.EndedSeq == nil:
		r.fail(CheckMetricFindings, nil, end, "%s: stage run %s has not ended; its metrics are not final", t.Label, t.Run)
	case len(body.MetricFindings) > 0:
		r.fail(CheckMetricFindings, body.MetricFindings, end, "%s: stage run %s recorded %d problems with its metrics files (run.end metric_findings): %s",
			t.Label, t.Run, len(body.MetricFindings), strings.Join(body.MetricFindings, "; "))
	default:
		r.pass(CheckMetricFindings, nil, end, "%s: stage run %s read its metrics files without problems", t.Label, t.Run)
	}
	return nil
}

// learningRate adds the learning-rate finding of one run.
func learningRate(r *Report, t *trainRun, lr *Series) {
	noUpdate := t.Label == LabelNoUpdate
	if lr == nil {
		k, v, ok := lrParam(t.start.Params)
		start := []int64{t.run.StartedSeq}
		switch {
		case !ok:
			r.fail(CheckLearningRate, nil, start, "%s: stage run %s recorded no learning rate, neither as a metric nor as a parameter (--param lr=...)", t.Label, t.Run)
		case noUpdate && v != 0:
			r.fail(CheckLearningRate, nil, start, "%s: the No-update control was given %s=%g; it must train with lr = 0", t.Label, k, v)
		case !noUpdate && v <= 0:
			r.fail(CheckLearningRate, nil, start, "%s: stage run %s was given %s=%g; a trained run needs lr > 0", t.Label, t.Run, k, v)
		default:
			r.pass(CheckLearningRate, nil, start, "%s: parameter %s=%g (no learning-rate metric logged)", t.Label, k, v)
		}
		return
	}
	if noUpdate {
		var seqs []int64
		first := -1
		for i, p := range lr.Points {
			if p.Value != 0 {
				seqs = append(seqs, lr.Seqs[i])
				if first < 0 {
					first = i
				}
			}
		}
		if first >= 0 {
			p := lr.Points[first]
			r.fail(CheckLearningRate, nil, seqs, "%s: the No-update control logged %s = %g at step %d (%d steps with lr ≠ 0); it must train with lr = 0",
				t.Label, lr.Key, p.Value, p.Step, len(seqs))
			return
		}
		r.pass(CheckLearningRate, nil, []int64{lr.Seqs[0]}, "%s: %s = 0 at all %d logged steps", t.Label, lr.Key, len(lr.Points))
		return
	}
	if m := maxValue(lr.Points); m > 0 {
		i := slices.IndexFunc(lr.Points, func(p ledger.MetricPoint) bool { return p.Value > 0 })
		r.pass(CheckLearningRate, nil, []int64{lr.Seqs[i]}, "%s: %s > 0 (max %g)", t.Label, lr.Key, m)
		return
	}
	r.fail(CheckLearningRate, nil, lr.Seqs, "%s: stage run %s logged %s = 0 at all %d steps: it did not train", t.Label, t.Run, lr.Key, len(lr.Points))
}

// maxValue is the largest value of pts, NaN ignored; -Inf when none.
func maxValue(pts []ledger.MetricPoint) float64 {
	m := math.Inf(-1)
	for _, p := range pts {
		if p.Value > m {
			m = p.Value
		}
	}
	return m
}
