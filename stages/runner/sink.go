package runner

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// LogChunk is the body of a log entry: Bytes bytes of one stream starting
// at Offset, stored as the entry's blob. Concatenating a run's chunks of a
// stream in seq order gives the stream as recorded: with every secret that
// run.start redacted masked as ledger.Redacted (Masked counts them), so
// offsets and sizes are those of the masked stream.
type LogChunk struct {
	Stream string `json:"stream"` // "stdout" or "stderr"
	Offset int64  `json:"offset"`
	Bytes  int    `json:"bytes"`
	Masked int    `json:"masked,omitempty"`
}

// logChunkMax is how much output is buffered before it goes to the ledger
// even between ticks.
const logChunkMax = 1 << 20

// logSink tees one output stream of the stage to the terminal, as the
// stage wrote it, and, in chunks and with secrets masked, to the ledger, so
// output up to the last flush survives a crash.
type logSink struct {
	mu     sync.Mutex
	ctx    context.Context
	l      *ledger.Ledger
	run    string
	stream string
	term   io.Writer
	mask   *ledger.Masker // nil: no secret to mask
	buf    bytes.Buffer
	masked int // secrets masked in buf
	offset int64
	err    error // the first ledger error; later writes still reach the terminal
}

func (s *logSink) Write(p []byte) (int, error) {
	if s.term != nil {
		s.term.Write(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mask != nil {
		out, n := s.mask.Mask(p)
		s.buf.Write(out)
		s.masked += n
	} else {
		s.buf.Write(p)
	}
	if s.buf.Len() >= logChunkMax {
		s.flushLocked()
	}
	return len(p), nil
}

// flush writes what is buffered as a blob and a log entry. Until final
// (the stage has exited), a tail that may begin a secret stays held back.
func (s *logSink) flush(final bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if final && s.mask != nil {
		out, n := s.mask.Flush()
		s.buf.Write(out)
		s.masked += n
	}
	s.flushLocked()
	return s.err
}

func (s *logSink) flushLocked() {
	if s.buf.Len() == 0 || s.err != nil {
		return
	}
	d, n, err := s.l.PutBlob(bytes.NewReader(s.buf.Bytes()))
	if err == nil {
		_, err = s.l.Append(s.ctx, ledger.Record{Kind: records.KindLog, Run: s.run,
			Body: LogChunk{Stream: s.stream, Offset: s.offset, Bytes: int(n), Masked: s.masked}, Blobs: []ledger.Digest{d}})
	}
	if err != nil {
		s.err = err
		return
	}
	s.offset += n
	s.masked = 0
	s.buf.Reset()
}

// syncWriter serialises writes to a terminal stream that the stage's output
// and rlgate's own warnings share.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
