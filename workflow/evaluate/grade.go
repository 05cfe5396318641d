package evaluate

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
)

// GradeRequest is rlgate grade: prediction files in one format, graded
// against one import's gold under one metric.
type GradeRequest struct {
	Predictions     []string // files, graded in this order
	Format          string   // one of grade.Formats
	Tasks, DBRoot   string
	Metric          string
	Run             string        // only with one file; empty: from the file's name and digest
	QueryTimeout    time.Duration // zero: each metric's official default
	Lenient         bool
	AllowDBMismatch bool
	Progress        io.Writer
	Terminal        bool // Progress is a terminal
}

// GradeFiles checks r (a value out of range is a usage.Error) and grades
// its files (Grade).
func GradeFiles(ctx context.Context, dir string, r GradeRequest) ([]*grade.FileSummary, error) {
	m, err := grade.ParseMetric(r.Metric)
	switch {
	case err != nil:
		return nil, usagef("--metric %q: want %s", r.Metric, grade.MetricList())
	case !slices.Contains(grade.Formats, r.Format):
		return nil, usagef("--format %q: want %s", r.Format, strings.Join(grade.Formats, ", "))
	case r.QueryTimeout < 0:
		return nil, usagef("--query-timeout %s: want a positive duration", r.QueryTimeout)
	case r.Run != "" && len(r.Predictions) > 1:
		return nil, usagef("--run names one run; give one --predictions")
	}
	var files []grade.FileOptions
	for _, p := range r.Predictions {
		files = append(files, grade.FileOptions{Predictions: p, Format: r.Format, Dataset: r.Tasks, DBRoot: r.DBRoot, Metric: m, Run: r.Run,
			Lenient: r.Lenient, AllowDBMismatch: r.AllowDBMismatch, Progress: r.Progress, Terminal: r.Terminal})
	}
	opts := grade.Options{BirdBudget: r.QueryTimeout}
	opts.Timeout = r.QueryTimeout
	return Grade(ctx, dir, opts, files)
}

// Grade grades each prediction file in turn, each as a grading run of the
// ledger in dir, with one grader, so each gold query runs once for all of
// them. It stops at the first file that fails, returning the summaries of
// those before it.
func Grade(ctx context.Context, dir string, opts grade.Options, files []grade.FileOptions) ([]*grade.FileSummary, error) {
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
	return out, nil
}
