package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zeebo/blake3"
)

// blobPath is blobs/<first two hex digits>/<64 hex digits>.
func (l *Ledger) blobPath(d Digest) string {
	h := d.Hex()
	return filepath.Join(l.dir, blobsDir, h[:2], h)
}

// PutBlob streams r into the blob store and returns its digest and size.
// The bytes go to a temporary file that is fsynced and renamed into place
// (and the directory fsynced) before PutBlob returns, so an entry appended
// afterwards never names a blob a crash could lose. Storing bytes that are
// already present is a no-op.
func (l *Ledger) PutBlob(r io.Reader) (Digest, int64, error) {
	tmp, err := os.CreateTemp(filepath.Join(l.dir, blobsDir, tmpDir), "put-*")
	if err != nil {
		return Digest{}, 0, fmt.Errorf("put blob: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := Hasher()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Digest{}, n, fmt.Errorf("put blob: %w", err)
	}
	d := SumDigest(h)
	dst := l.blobPath(d)
	if _, err := os.Stat(dst); err == nil {
		return d, n, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Digest{}, n, fmt.Errorf("put blob %s: %w", d, err)
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return Digest{}, n, fmt.Errorf("put blob %s: %w", d, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return Digest{}, n, fmt.Errorf("put blob %s: %w", d, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return Digest{}, n, fmt.Errorf("put blob %s: %w", d, err)
	}
	return d, n, nil
}

// PutBlobBytes stores b; see PutBlob.
func (l *Ledger) PutBlobBytes(b []byte) (Digest, error) {
	d, _, err := l.PutBlob(bytes.NewReader(b))
	return d, err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// OpenBlob opens a blob for streaming. The reader re-hashes what it yields
// and returns ErrBlobCorrupt instead of io.EOF when the bytes do not match
// the digest, so a caller that reads to the end never trusts bad bytes.
func (l *Ledger) OpenBlob(d Digest) (io.ReadCloser, error) {
	f, err := os.Open(l.blobPath(d))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("open blob %s: %w", d, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %s: %w", d, err)
	}
	return &verifyingReader{f: f, h: Hasher(), want: d}, nil
}

// ReadBlob reads a whole blob and checks its digest.
func (l *Ledger) ReadBlob(d Digest) ([]byte, error) {
	r, err := l.OpenBlob(d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

type verifyingReader struct {
	f    *os.File
	h    *blake3.Hasher
	want Digest
	done bool
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.f.Read(p)
	v.h.Write(p[:n])
	if errors.Is(err, io.EOF) && !v.done {
		v.done = true
		if got := SumDigest(v.h); got != v.want {
			return n, fmt.Errorf("read blob %s: %w (content hashes to %s)", v.want, ErrBlobCorrupt, got)
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.f.Close() }
