package metrics

import (
	"fmt"
	"io"
	"os"
	"runtime"
)

// readFramed decodes the records of a W&B or SwanLab record file from the
// cursor on. A record the writer has not finished (the file ends inside
// it) is held back while the run goes on; at Final it is a finding, as is
// any unusable chunk (checksum mismatch, a chunk crossing its block, chunks
// out of order): reading stops there and every record before it is kept.
// Only a file that is not of the format at all is an error.
//
// The file is read a window of readChunk bytes at a time into one reused
// buffer (a window that ends inside a record is read again from the
// record's start, and grows when one record does not fit): a run of
// hundreds of MB is never held in memory whole, and its records are
// decoded while their bytes are still in the CPU's caches.
func (t *Tailer) readFramed(f *os.File, final bool) error {
	if t.stopped {
		return nil
	}
	// Read up to what the file held when it was looked at; what the writer
	// adds meanwhile waits for the next read.
	size, err := t.seek(f)
	if err != nil {
		return err
	}
	start := t.cur.Offset
	// pos is how far the records have been read; the cursor, how far they
	// have been decoded, which trails it while a batch is being parsed.
	pos := t.cur.Offset
	dec := t.framedDecoder(size - start)
	reserved := false
	for window := int64(readChunk); ; {
		base := pos
		n := min(size-base, window)
		if int64(cap(t.buf)) < n {
			t.buf = make([]byte, n)
		}
		data := t.buf[:n]
		if _, err := f.ReadAt(data, base); err != nil {
			return fmt.Errorf("read metrics: %w", err)
		}
		whole := base+n == size // the window reaches what the file held
		if base == 0 {
			if n < llogHeaderLen && !final {
				t.sk.stats.PendingBytes = n
				return nil
			}
			if err := t.checkFramedHeader(data); err != nil {
				return &ParseError{Path: t.path, Err: err}
			}
			t.cur.Offset, pos = llogHeaderLen, llogHeaderLen
		}
		r := llogReader{data: data, base: base, off: pos}
		for {
			// Judged from what is decoded, which trails what is read
			// while batches are parsed.
			if !reserved && t.cur.Offset-start >= readChunk {
				t.reserve(t.cur.Offset-start, size-t.cur.Offset)
				reserved = true
			}
			rec, err := r.next()
			if err == io.EOF && whole {
				if err := dec.drain(); err != nil {
					return err
				}
				t.sk.stats.PendingBytes = 0
				return nil
			}
			stop, incomplete := err.(*llogStop)
			if err == io.EOF || incomplete && stop.Incomplete && !whole {
				break // the rest is in the next window
			}
			if incomplete {
				if err := dec.drain(); err != nil {
					return err
				}
				t.sk.stats.PendingBytes = size - t.cur.Offset
				if stop.Incomplete && !final {
					return nil
				}
				what := "corrupt"
				if stop.Incomplete {
					what = "truncated"
				}
				t.run.finding("%s %s: %s tail: %v; every record before it was read, the %d bytes from byte %d on were not",
					t.format, t.path, what, stop, size-t.cur.Offset, t.cur.Offset)
				t.stopped = true
				return nil
			}
			if err := dec.add(rec, r.off); err != nil {
				return err
			}
			pos = r.off
		}
		if pos == base {
			window *= 2 // one record longer than the window
		}
	}
}

// framedDecoder decodes the records readFramed reads, in file order.
type framedDecoder interface {
	// add decodes rec, which ends at end, or takes it to decode later;
	// rec's memory is the reader's. The cursor moves past a record once
	// it is decoded.
	add(rec []byte, end int64) error
	// drain decodes every record add took.
	drain() error
}

// framedDecoder returns the decoder for left bytes of records: W&B runs
// of more than parallelBytes are parsed on every core (wandbBatches).
func (t *Tailer) framedDecoder(left int64) framedDecoder {
	if t.format == FormatWandB && left > parallelBytes && runtime.GOMAXPROCS(0) > 1 {
		return &wandbBatches{t: t}
	}
	return serialDecoder{t}
}

// serialDecoder decodes each record as it is read.
type serialDecoder struct{ t *Tailer }

func (s serialDecoder) add(rec []byte, end int64) error {
	t := s.t
	var err error
	if t.format == FormatWandB {
		err = t.wandb.record(&t.sk, t.run, rec, nil)
	} else {
		err = t.swan.record(&t.sk, t.run, rec)
	}
	if err != nil {
		return &ParseError{Path: t.path, Offset: t.cur.Offset, Err: err}
	}
	t.cur.Offset = end
	return nil
}

func (serialDecoder) drain() error { return nil }

// checkFramedHeader checks the file header of the Tailer's format.
func (t *Tailer) checkFramedHeader(data []byte) error {
	if t.format == FormatWandB {
		v, err := checkLLogHeader(data, wandbIdent, wandbMagic)
		if err == nil && v > 1 {
			err = fmt.Errorf("W&B record file version %d; this rlgate reads versions 0 and 1", v)
		}
		return err
	}
	v, err := checkLLogHeader(data, swanIdent, swanMagic)
	if err == nil && v != swanVersionJSON {
		err = fmt.Errorf("backup.swanlab version %d holds protobuf records, which this rlgate does not read (it reads version %d, JSON records, written by SwanLab 0.6). Try: import the run's logs with a SwanLab 0.6 writer, or --metrics with the trainer's own log", v, swanVersionJSON)
	}
	return err
}
