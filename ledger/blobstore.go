package ledger

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
)

// blobStore is where a ledger keeps its blobs, by digest: a local
// directory (localBlobs, every SQLite ledger's and a PostgreSQL ledger's
// by default) or an S3 bucket (s3Blobs, see s3.go). PutBlob writes and
// hashes the bytes to a local temporary file first whatever the store,
// so a store only moves a finished file into place.
type blobStore interface {
	// put stores the finished temporary file tmp, whose bytes hash to d
	// and number n, as blob d, durably, before it returns; tmp is gone
	// afterwards or removed by the caller.
	put(ctx context.Context, tmp string, d Digest, n int64) error
	// open opens blob d for reading and returns its size; an absent blob
	// gives an error that is fs.ErrNotExist.
	open(ctx context.Context, d Digest) (io.ReadCloser, int64, error)
	// stored returns nil when blob d is stored (the write-ordering rule:
	// see prepare); an absent blob gives an error that is fs.ErrNotExist.
	stored(ctx context.Context, d Digest) error
	// check makes sure the store can be read, so that a problem shows up
	// when the ledger is opened, not half-way through a stage.
	check(ctx context.Context) error
	// noteStray adds a note to rep for every blob refs lacks and for
	// anything else in the store that is not a blob.
	noteStray(ctx context.Context, rep *VerifyReport, refs map[Digest]int64)
}

// localBlobs is a blob directory: root/<first two hex digits>/<64 hex
// digits>, with temporary files in root/tmp.
type localBlobs struct{ root string }

func (s localBlobs) path(d Digest) string {
	h := d.Hex()
	return filepath.Join(s.root, h[:2], h)
}

// put renames tmp into place (and fsyncs the directory). Bytes already
// present are renamed into place all the same: the fresh copy replaces the
// old file instead of trusting it, so a damaged copy is repaired, never
// named anew.
func (s localBlobs) put(_ context.Context, tmp string, d Digest, _ int64) error {
	dst := s.path(d)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

func (s localBlobs) open(_ context.Context, d Digest) (io.ReadCloser, int64, error) {
	f, size, err := openBlobFile(s.path(d))
	if err != nil {
		return nil, 0, err
	}
	return f, size, nil
}

func (s localBlobs) check(context.Context) error { return checkBlobDir(s.root) }

// stored also requires a regular file.
func (s localBlobs) stored(_ context.Context, d Digest) error {
	fi, err := os.Lstat(s.path(d))
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(fi.Mode())
	}
	return err
}

// noteStray notes blobs no entry names (a crash between storing a blob
// and appending its entry leaves one; harmless) and leftover temp files.
func (s localBlobs) noteStray(ctx context.Context, rep *VerifyReport, refs map[Digest]int64) {
	filepath.WalkDir(s.root, func(path string, de os.DirEntry, err error) error {
		if ctx.Err() != nil {
			return filepath.SkipAll
		}
		if err != nil {
			rep.add(Finding{Severity: SeverityError, Check: "blob", Message: fmt.Sprintf("cannot list %s: %v", path, err)})
			return nil
		}
		if de.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(s.root, path)
		if filepath.Dir(rel) == tmpDir {
			rep.add(Finding{Severity: SeverityNote, Check: "blob", Message: "leftover temporary file from an interrupted write: " + path})
			return nil
		}
		noteStrayBlob(rep, refs, filepath.ToSlash(rel), path)
		return nil
	})
}

// noteStrayBlob notes the stored item rel (slash-separated, relative to
// the store's root; shown as where) when it is not a blob or no entry
// names it.
func noteStrayBlob(rep *VerifyReport, refs map[Digest]int64, rel, where string) {
	dir, name := path.Split(rel)
	d, err := ParseDigest(name)
	switch {
	case err != nil || dir != d.Hex()[:2]+"/":
		rep.add(Finding{Severity: SeverityNote, Check: "blob", Message: "file in the blob store that is not a blob: " + where})
	default:
		if _, ok := refs[d]; !ok {
			rep.add(Finding{Severity: SeverityNote, Check: "blob", Digest: d.String(), Message: "no entry names this blob (left by an interrupted write; harmless)"})
		}
	}
}

// hashBlob re-hashes blob d of s and returns the digest of its bytes and
// their count. Cancelling ctx stops it between reads.
func hashBlob(ctx context.Context, s blobStore, d Digest) (Digest, int64, error) {
	r, size, err := s.open(ctx, d)
	if err != nil {
		return Digest{}, 0, err
	}
	defer r.Close()
	h := Hasher()
	n, err := io.CopyBuffer(h, ctxReader{ctx, io.LimitReader(r, size)}, make([]byte, blobReadBuffer))
	if err == nil && n != size {
		err = fmt.Errorf("blob %s shrank from %d to %d bytes while being read", d, size, n)
	}
	if err != nil {
		return Digest{}, n, err
	}
	return SumDigest(h), n, nil
}
