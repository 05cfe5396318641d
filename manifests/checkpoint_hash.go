package manifests

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// parallel runs jobs 0..n-1 on GOMAXPROCS workers, each job claimed in index
// order by the next idle worker. Every worker calls newWorker once, so it can
// own its buffers. After the first error no job starts, and that error is
// returned.
func parallel(ctx context.Context, n int, newWorker func() func(i int) error) error {
	var (
		next    atomic.Int64
		once    sync.Once
		first   error
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { first = err })
		stopped.Store(true)
	}
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			run := newWorker()
			for !stopped.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				if err := run(i); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
