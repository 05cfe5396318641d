package ledger

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestForEachFirstErrorStopsTheRest: every call but the failing one waits
// for its context, so it ends only when the first error cancels it; after
// that no call starts, and the error returned is the one that failed.
func TestForEachFirstErrorStopsTheRest(t *testing.T) {
	boom := errors.New("boom")
	const n = 1000
	var calls atomic.Int64
	err := ForEach(t.Context(), n, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 0 {
			return boom
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Errorf("ForEach = %v, want the first error, %v", err, boom)
	}
	if c := calls.Load(); c > int64(runtime.GOMAXPROCS(0)) {
		t.Errorf("%d of %d calls made, want at most the %d running when the first failed", c, n, runtime.GOMAXPROCS(0))
	}
}

// TestForEachCanceled: a canceled context (Ctrl-C) reaches the running
// calls, none starts after it, and ForEach says so.
func TestForEachCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const n = 1000
	var calls atomic.Int64
	err := ForEach(ctx, n, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 0 {
			cancel()
			return nil
		}
		<-ctx.Done()
		return nil // as a worker that notices the cancellation and stops
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ForEach = %v, want %v", err, context.Canceled)
	}
	if c := calls.Load(); c > int64(runtime.GOMAXPROCS(0)) {
		t.Errorf("%d of %d calls made, want at most the %d running when ctx was canceled", c, n, runtime.GOMAXPROCS(0))
	}
}

// TestForEachCallsEachOnce: every i once, however n compares with the
// number of goroutines, never more than GOMAXPROCS calls at a time.
func TestForEachCallsEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, runtime.GOMAXPROCS(0) + 1, 5000} {
		calls := make([]atomic.Int32, n)
		var running, most atomic.Int32
		err := ForEach(t.Context(), n, func(_ context.Context, i int) error {
			r := running.Add(1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			calls[i].Add(1)
			runtime.Gosched()
			running.Add(-1)
			return nil
		})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: fn(%d) called %d times, want once", n, i, c)
			}
		}
		if m := most.Load(); m > int32(runtime.GOMAXPROCS(0)) {
			t.Errorf("n=%d: %d calls at once, want at most GOMAXPROCS=%d", n, m, runtime.GOMAXPROCS(0))
		}
	}
}
