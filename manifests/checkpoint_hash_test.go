package manifests

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestParallelFirstErrorCancelsTheRest: when one job fails, a job already
// running sees its context canceled (it would otherwise wait forever), no
// further job starts, and the first error is what parallel returns.
func TestParallelFirstErrorCancelsTheRest(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two jobs must run at once
	boom := errors.New("boom")
	started := make(chan struct{})
	var ran atomic.Int32
	err := parallel(t.Context(), 100, func() func(context.Context, int) error {
		return func(ctx context.Context, i int) error {
			ran.Add(1)
			switch i {
			case 0:
				<-started
				return boom
			case 1:
				close(started)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
	})
	if !errors.Is(err, boom) {
		t.Errorf("parallel returned %v, want the first error", err)
	}
	if n := ran.Load(); n != 2 {
		t.Errorf("%d jobs ran, want 2: none may start after the first error", n)
	}
}

// TestHashTreeCanceled: a canceled context stops tree hashing with the
// context's error, which the CLI maps to exit 130.
func TestHashTreeCanceled(t *testing.T) {
	root := writeTree(t, sample)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := HashTree(ctx, root); !errors.Is(err, context.Canceled) {
		t.Errorf("HashTree with a canceled context: %v, want context.Canceled", err)
	}
}
