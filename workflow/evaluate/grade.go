package evaluate

import (
	"context"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
)

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
