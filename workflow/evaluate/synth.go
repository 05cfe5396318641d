package evaluate

import (
	"context"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/synth"
)

// SynthOptions are a rollout's, with the question sample, the metric and
// the output directory.
type SynthOptions struct {
	PlayOptions
	NumExamples int          // 0: every question
	Metric      grade.Metric // empty: the dataset's
	Out         string
}

// Synth samples the questions under the protocol's seed, names the run
// from what fixes the synthesis when o.Run is empty, checks the databases
// against the import and runs the synthesis (synth.Synthesize). When it fails,
// the summary that comes back beside the error holds the rollout's, if
// one was played.
func Synth(ctx context.Context, o SynthOptions) (*synth.Summary, error) {
	if m := o.Metric; m != "" {
		if _, err := grade.ParseMetric(string(m)); err != nil || !m.Executes() {
			return nil, usagef("--metric %q: want an execution metric: %s, not spider-em", m, grade.MetricList())
		}
	}
	switch {
	case o.Sampling.N != nil && *o.Sampling.N < 1:
		return nil, usagef("--samples-per-question %d: want at least 1", *o.Sampling.N)
	case o.NumExamples < 0:
		return nil, usagef("--num-examples %d: want 0 (all questions) or more", o.NumExamples)
	}
	ro, src, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if src.Dir == "" {
		return nil, usagef("synth: --tasks must be a directory written by rlgate data import, holding the gold beside the tasks")
	}
	man, err := dataset.ReadManifest(src.Dir)
	if err != nil {
		return nil, err
	}
	if o.Metric == "" {
		o.Metric = synth.DefaultMetric(man.Kind)
	}
	ro.Tasks = synth.Sample(ro.Tasks, o.NumExamples, ro.Protocol.Sampling.Seed)
	if ro.Run == "" {
		if ro.Run, err = synth.DefaultRun(&ro); err != nil {
			return nil, err
		}
	}
	dbs, err := checkTaskDatabases(ctx, src, false, o.Progress)
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	g := grade.NewGrader(grade.Options{}, nil)
	defer g.Close()
	return synth.Synthesize(ctx, l, g, synth.Options{Rollout: ro, Dataset: src.Dir, DBRoot: o.DBRoot, Metric: o.Metric, NumExamples: o.NumExamples,
		Seed: ro.Protocol.Sampling.Seed, Out: o.Out, Databases: dbs, Progress: o.Progress})
}
