package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
)

// priorFile is a metrics file that was there before the stage started:
// an earlier run's when the stage writes the file again (repro running a
// training stage again), or the file the user means to record when the
// stage leaves it alone (rlgate run --metrics FILE -- true). Every run
// reads its metrics files from the start; when such a file was read as
// soon as it was seen, an earlier run's points were recorded as this
// run's (a trainer that appends), or the reader found the file shorter
// than what it had read and stopped (a trainer that truncates:
// ErrRewound). So it is read only once the stage has written to it or
// exited, and then from where the stage's own bytes start.
type priorFile struct {
	info   os.FileInfo
	digest ledger.Digest // of its bytes when the stage started
	lines  int64         // the newlines in them
	whole  bool          // they end with one: whole lines, as text formats write
}

// notePrior returns path's priorFile when it is a regular file, or nil.
// Its bytes are hashed now, before the stage can change them, so that an
// append can be told from a rewrite later.
func notePrior(path string) (*priorFile, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("metrics %s: %w", path, err)
	}
	defer f.Close()
	h := ledger.Hasher()
	lc := &lineCounter{}
	if _, err := io.Copy(io.MultiWriter(h, lc), io.LimitReader(f, fi.Size())); err != nil {
		return nil, fmt.Errorf("metrics %s: %w", path, err)
	}
	return &priorFile{info: fi, digest: ledger.SumDigest(h), lines: lc.n, whole: fi.Size() == 0 || lc.last == '\n'}, nil
}

// lineCounter counts the newlines written to it and keeps the last byte.
type lineCounter struct {
	n    int64
	last byte
}

func (c *lineCounter) Write(b []byte) (int, error) {
	c.n += int64(bytes.Count(b, []byte("\n")))
	if len(b) > 0 {
		c.last = b[len(b)-1]
	}
	return len(b), nil
}

// start says where this run's reading of the file begins, and how that
// was decided (for run.end); wait is true while the stage has not touched
// the file and may still write it. final: the stage has exited.
func (p *priorFile) start(path string, final bool) (from metrics.Cursor, how string, wait bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return from, "", true, nil // gone for now: a trainer replacing it
	}
	switch {
	case os.SameFile(fi, p.info) && fi.Size() == p.info.Size() && fi.ModTime().Equal(p.info.ModTime()):
		if !final {
			return from, "", true, nil
		}
		return from, "there before the stage started, which left it unchanged: read whole", false, nil
	case !os.SameFile(fi, p.info):
		return from, "replaced by the stage: read from the start", false, nil
	case fi.Size() <= p.info.Size() || !p.whole:
		// An append makes the file longer, and after whole lines a text
		// format's next record starts where they end; otherwise the
		// stage truncated the file or wrote over it.
		return from, "rewritten by the stage: read from the start", false, nil
	}
	same, err := p.prefixIntact(path)
	if err != nil {
		return from, "", false, err
	}
	if !same {
		return from, "rewritten by the stage: read from the start", false, nil
	}
	// The earlier bytes are still there, whole lines, and the stage wrote
	// after them: it appended, and its points start there.
	from = metrics.Cursor{Offset: p.info.Size(), Line: p.lines}
	return from, fmt.Sprintf("appended to by the stage: read from byte %d, where the earlier run's lines end", from.Offset), false, nil
}

// prefixIntact reports whether the file at path still begins with the
// bytes it had when the stage started.
func (p *priorFile) prefixIntact(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("metrics %s: %w", path, err)
	}
	defer f.Close()
	h := ledger.Hasher()
	if _, err := io.CopyN(h, f, p.info.Size()); err != nil {
		return false, fmt.Errorf("metrics %s: %w", path, err)
	}
	return ledger.SumDigest(h) == p.digest, nil
}
