package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/zeebo/blake3"
)

// PutBlob streams r into the blob store and returns its digest and size.
// The bytes go to a local temporary file that is fsynced, hashed on the
// way, and then moved into the store (renamed into place in a directory,
// uploaded to S3) before PutBlob returns, so an entry appended afterwards
// never names a blob a crash could lose.
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
	if err := l.blobs.put(context.Background(), tmp.Name(), d, n); err != nil {
		return Digest{}, n, fmt.Errorf("put blob %s: %w", d, err)
	}
	return d, n, nil
}

// PutBlobBytes stores b; see PutBlob.
func (l *Ledger) PutBlobBytes(b []byte) (Digest, error) {
	d, _, err := l.PutBlob(bytes.NewReader(b))
	return d, err
}

// syncDir fsyncs a directory (or a file: it opens either read-only).
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// openBlobFile opens a blob file after checking that it is a regular file
// (not a FIFO, a device, a directory or a symlink to one), so that reading
// it ends, and returns it with its size. Readers read no more than that
// size, so a file that grows meanwhile cannot keep them reading either.
func openBlobFile(path string) (*os.File, int64, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, notRegular(fi.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	now, err := f.Stat()
	switch {
	case err != nil:
	case !now.Mode().IsRegular():
		err = notRegular(now.Mode())
	case !os.SameFile(fi, now):
		err = fmt.Errorf("%w: it was replaced while being opened", ErrBlobNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, now.Size(), nil
}

func notRegular(m fs.FileMode) error {
	return fmt.Errorf("%w: it is %s", ErrBlobNotRegular, untrusted.Kind(m))
}

// blobReadBuffer is how much one read of a blob file asks for.
const blobReadBuffer = 256 << 10

// ctxReader stops reading once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// OpenBlob opens a blob for streaming. The reader re-hashes what it yields
// and returns ErrBlobCorrupt instead of io.EOF when the bytes do not match
// the digest, so a caller that reads to the end never trusts bad bytes. A
// blob file that is not a regular file is refused with ErrBlobNotRegular.
func (l *Ledger) OpenBlob(d Digest) (io.ReadCloser, error) {
	f, size, err := l.openBlobFile(d)
	if err != nil {
		return nil, err
	}
	return &verifyingReader{r: io.LimitReader(f, size), c: f, h: Hasher(), want: d, size: size}, nil
}

// openBlobFile opens the file (or object) of blob d and returns its size
// at open.
func (l *Ledger) openBlobFile(d Digest) (io.ReadCloser, int64, error) {
	f, size, err := l.blobs.open(context.Background(), d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("open blob %s: %w", d, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open blob %s: %w", d, err)
	}
	return f, size, nil
}

// ReadBlob reads a whole blob and checks its digest.
func (l *Ledger) ReadBlob(d Digest) ([]byte, error) {
	var b bytes.Buffer
	if err := l.ReadBlobInto(d, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MaxWholeBlob is the largest blob ReadBlob and ReadBlobInto read into
// memory. The blobs rlgate reads whole (manifests, task lists, batches of
// episodes) are far smaller; a larger file in the blob store was put there
// by something else, and reading it whole would take the memory its size
// says before its digest could be checked. Stream such a blob with
// OpenBlob.
const MaxWholeBlob = 1 << 30

// ReadBlobInto reads a whole blob into buf, replacing what it held, and
// checks its digest: a caller that reads many blobs reuses one buffer.
// buf is grown to the blob's size first, as the doubling of a plain read
// would copy and clear a large blob several times over. The bytes are
// hashed once read, in one call: a streaming hasher is 11 KB of fresh
// memory per blob, and a gate reads about a thousand. A blob larger than
// MaxWholeBlob is refused unread.
func (l *Ledger) ReadBlobInto(d Digest, buf *bytes.Buffer) error {
	f, size, err := l.openBlobFile(d)
	if err != nil {
		return err
	}
	defer f.Close()
	if size > MaxWholeBlob {
		return fmt.Errorf("read blob %s: %d bytes, more than the %d this reader takes into memory: no blob it reads is that large (rlgate verify checks the blob's digest)", d, size, MaxWholeBlob)
	}
	buf.Reset()
	buf.Grow(int(size) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, size)); err != nil {
		return fmt.Errorf("read blob %s: %w", d, err)
	}
	return checkBlob(d, buf.Bytes())
}

// checkBlob returns ErrBlobCorrupt when b does not hash to d.
func checkBlob(d Digest, b []byte) error {
	if got := Sum(b); got != d {
		return corruptBlob(d, got)
	}
	return nil
}

// corruptBlob is the error of reading blob want whose bytes hash to got.
func corruptBlob(want, got Digest) error {
	return fmt.Errorf("read blob %s: %w (content hashes to %s)", want, ErrBlobCorrupt, got)
}

type verifyingReader struct {
	r    io.Reader // c, limited to its size at open
	c    io.Closer
	h    *blake3.Hasher
	want Digest
	done bool
	size int64 // of the blob at open
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if errors.Is(err, io.EOF) && !v.done {
		v.done = true
		if got := SumDigest(v.h); got != v.want {
			return n, corruptBlob(v.want, got)
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.c.Close() }
