package ledger

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// ForEach runs fn(ctx, i) for every i in [0, n), started in order of i, on at
// most GOMAXPROCS goroutines of an errgroup. The first error cancels the
// context every other call sees, no call starts after it, and that error
// is returned; a canceled ctx (Ctrl-C) stops them all the same way. It is
// the one worker pool of the packages above, kept in the lowest layer so
// that each of them can use it; the append's record preparation is its
// use here.
//
// Each goroutine takes the next i until none is left, rather than one
// goroutine being started per i: a call that needs a deep stack (a
// recursive parser) then grows its goroutine's stack once, not once per
// call, which cost a grading's exact match a twentieth of its CPU.
func ForEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range min(n, runtime.GOMAXPROCS(0)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := fn(gctx, i); err != nil {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// Memo computes a value once per key for every caller that asks; a caller
// that asks while another computes it waits (or gives up when its context
// ends), and callers asking for other keys go on meanwhile. A failed value
// is not kept: the next caller computes it again. The zero Memo is empty.
type Memo[V any] struct {
	mu sync.Mutex
	m  map[string]*memoEntry[V]
}

type memoEntry[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// Get returns key's value, computing it with compute if no caller has.
func (m *Memo[V]) Get(ctx context.Context, key string, compute func() (V, error)) (V, error) {
	m.mu.Lock()
	if e := m.m[key]; e != nil {
		m.mu.Unlock()
		select {
		case <-e.done:
			return e.v, e.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	e := &memoEntry[V]{done: make(chan struct{})}
	if m.m == nil {
		m.m = map[string]*memoEntry[V]{}
	}
	m.m[key] = e
	m.mu.Unlock()
	e.v, e.err = compute()
	if e.err != nil {
		m.mu.Lock()
		delete(m.m, key)
		m.mu.Unlock()
	}
	close(e.done)
	return e.v, e.err
}
