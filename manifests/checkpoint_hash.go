package manifests

import (
	"context"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rlgate/rlgate/ledger"
)

// hashRange returns the BLAKE3 of the n bytes of r at off, read in
// len(buf)-sized chunks so that no tensor is ever held whole in memory.
func hashRange(ctx context.Context, r io.ReaderAt, off, n int64, buf []byte) (ledger.Digest, error) {
	// NB: the bytes hashed here define the model identity / file digest;
	// changing them breaks every recorded manifest. They are the tensor's raw
	// bytes, nothing more.
	h := ledger.Hasher()
	for n > 0 {
		if err := ctx.Err(); err != nil {
			return ledger.Digest{}, err
		}
		chunk := buf[:min(int64(len(buf)), n)]
		if _, err := r.ReadAt(chunk, off); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the file shrank since its header was read
			}
			return ledger.Digest{}, err
		}
		h.Write(chunk)
		off += int64(len(chunk))
		n -= int64(len(chunk))
	}
	return ledger.SumDigest(h), nil
}

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
