package metrics

import (
	"fmt"
	"io"
	"os"
)

// readFramed decodes the records of a W&B or SwanLab record file from the
// cursor on. A record the writer has not finished (the file ends inside
// it) is held back while the run goes on; at Final it is a finding, as is
// any unusable chunk (checksum mismatch, a chunk crossing its block, chunks
// out of order): reading stops there and every record before it is kept.
// Only a file that is not of the format at all is an error.
func (t *Tailer) readFramed(f *os.File, final bool) error {
	if t.stopped {
		return nil
	}
	size, err := t.seek(f)
	if err != nil {
		return err
	}
	// Read what the file held when it was looked at, in one allocation; what
	// the writer adds meanwhile waits for the next read.
	data := make([]byte, size-t.cur.Offset)
	if _, err := io.ReadFull(f, data); err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	base := t.cur.Offset
	if base == 0 {
		if len(data) < llogHeaderLen && !final {
			t.sk.stats.PendingBytes = int64(len(data))
			return nil
		}
		if err := t.checkFramedHeader(data); err != nil {
			return &ParseError{Path: t.path, Err: err}
		}
		t.cur.Offset = llogHeaderLen
	}
	r := llogReader{data: data, base: base, off: t.cur.Offset}
	reserved := false
	for {
		if !reserved && r.off-base >= readChunk {
			t.reserve(r.off-base, size-r.off)
			reserved = true
		}
		rec, err := r.next()
		if err == io.EOF {
			t.sk.stats.PendingBytes = 0
			return nil
		}
		if stop, ok := err.(*llogStop); ok {
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
		if err := t.decodeFramed(rec); err != nil {
			return &ParseError{Path: t.path, Offset: t.cur.Offset, Err: err}
		}
		t.cur.Offset = r.off
	}
}

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

// decodeFramed decodes one record of the Tailer's format.
func (t *Tailer) decodeFramed(rec []byte) error {
	if t.format == FormatWandB {
		return t.wandb.record(&t.sk, t.run, rec)
	}
	return t.swan.record(&t.sk, t.run, rec)
}
