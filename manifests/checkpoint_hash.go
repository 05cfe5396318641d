package manifests

import (
	"context"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// parallel runs jobs 0..n-1 in index order on at most GOMAXPROCS
// goroutines of an errgroup: the first error cancels the context every
// other job sees, no job starts after it, and that error is returned; a
// canceled ctx (Ctrl-C) stops them all the same way. Each worker state that
// newWorker returns (a job function owning its buffers) is made once and
// lent to one running job at a time, so buffers are not allocated per job.
func parallel(ctx context.Context, n int, newWorker func() func(ctx context.Context, i int) error) error {
	limit := min(runtime.GOMAXPROCS(0), n)
	workers := make(chan func(context.Context, int) error, limit)
	for range limit {
		workers <- newWorker()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			run := <-workers // never waits: at most limit jobs run at once
			defer func() { workers <- run }()
			if err := gctx.Err(); err != nil {
				return err
			}
			return run(gctx, i)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
