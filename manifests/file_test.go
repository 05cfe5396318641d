package manifests

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// TestHashRange checks that ranges hashed chunk by chunk, at any offset and
// with any buffer, give the BLAKE3 of their bytes, and that HashFile does.
func TestHashRange(t *testing.T) {
	data := make([]byte, 2*readBufSize+12345)
	for i := range data {
		data[i] = byte(i*31 + i>>9)
	}
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range []struct{ off, n int64 }{
		{0, int64(len(data))},
		{4097, readBufSize + 3},
		{int64(len(data)) - 100, 100},
		{12, 0},
	} {
		for _, size := range []int{4096, readBufSize} {
			got, err := hashRange(t.Context(), f, r.off, r.n, make([]byte, size))
			if want := ledger.Sum(data[r.off : r.off+r.n]); err != nil || got != want {
				t.Errorf("hashRange(%d, %d) with a %d-byte buffer = %v, %v; want %v", r.off, r.n, size, got, err, want)
			}
		}
	}
	d, n, err := HashFile(t.Context(), path)
	if err != nil || n != int64(len(data)) || d != ledger.Sum(data) {
		t.Errorf("HashFile = %v, %d, %v", d, n, err)
	}
	if _, _, err := HashFile(t.Context(), filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("HashFile of a missing file: no error")
	}
}

// TestHashRangeTruncated checks that a file cut short after its size was
// read gives an error rather than the digest of fewer bytes.
func TestHashRangeTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, make([]byte, 3*readBufSize), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, readBufSize); err != nil {
		t.Fatal(err)
	}
	if _, err := hashRange(t.Context(), f, 10, 3*readBufSize-10, make([]byte, readBufSize)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("hashRange over a truncated file: %v, want %v", err, io.ErrUnexpectedEOF)
	}
}
