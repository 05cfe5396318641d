package ui

import (
	"errors"
	"io"

	"github.com/rlgate/rlgate/ledger"
)

// blobCheck is a blob named by an entry and what re-hashing it found.
type blobCheck struct {
	Digest ledger.Digest
	// Result is "ok" (its bytes hash to its digest), "missing",
	// "corrupt" or "unreadable" (Detail says why).
	Result string
	Detail string
}

// checkBlob re-hashes blob d as the blob store reads it: ledger.OpenBlob's
// reader fails at the end with ErrBlobCorrupt when the bytes do not hash
// to d. It streams, so a large blob costs time, not memory.
func (s *Server) checkBlob(d ledger.Digest) blobCheck {
	r, err := s.l.OpenBlob(d)
	if err == nil {
		_, err = io.Copy(io.Discard, r)
		r.Close()
	}
	c := blobCheck{Digest: d, Result: "ok"}
	switch {
	case err == nil:
	case errors.Is(err, ledger.ErrNotFound):
		c.Result, c.Detail = "missing", "not in the blob store"
	case errors.Is(err, ledger.ErrBlobCorrupt):
		c.Result, c.Detail = "corrupt", err.Error()
	default:
		c.Result, c.Detail = "unreadable", err.Error()
	}
	return c
}

// checkBlobs re-hashes each of ds.
func (s *Server) checkBlobs(ds []ledger.Digest) []blobCheck {
	out := make([]blobCheck, len(ds))
	for i, d := range ds {
		out[i] = s.checkBlob(d)
	}
	return out
}
