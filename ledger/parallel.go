package ledger

import (
	"context"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// ForEach runs fn(ctx, i) for every i in [0, n) on at most GOMAXPROCS
// goroutines of an errgroup. The first error cancels the context every
// other call sees, no call starts after it, and that error is returned; a
// canceled ctx (Ctrl-C) stops them all the same way. It is the one worker
// pool of the packages above (an errgroup with SetLimit), kept in
// the lowest layer so that each of them can use it; the append's record
// preparation is its use here.
func ForEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			return fn(gctx, i)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
