package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// TestReadBlobIntoReusesBufferAndVerifies reads blobs into one buffer, as
// the gold audit's pooled buffers are: each read holds exactly its blob's
// bytes, and a blob whose file was changed on disk is refused, not read.
func TestReadBlobIntoReusesBufferAndVerifies(t *testing.T) {
	l, err := ledger.Init(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	long, short := bytes.Repeat([]byte(`{"task_id":"t"}`+"\n"), 1000), []byte(`{"task_id":"u"}`+"\n")
	var buf bytes.Buffer
	for _, b := range [][]byte{long, short} {
		d, err := l.PutBlobBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.ReadBlobInto(d, &buf); err != nil || !bytes.Equal(buf.Bytes(), b) {
			t.Fatalf("read %d bytes back as %d bytes (%v)", len(b), buf.Len(), err)
		}
	}

	d, err := l.PutBlobBytes(long)
	if err != nil {
		t.Fatal(err)
	}
	h := d.Hex()
	path := filepath.Join(l.Dir(), "blobs", h[:2], h)
	tampered := bytes.Replace(long, []byte(`"t"`), []byte(`"x"`), 1)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.ReadBlobInto(d, &buf); !errors.Is(err, ledger.ErrBlobCorrupt) {
		t.Fatalf("a changed blob read with error %v, want %v", err, ledger.ErrBlobCorrupt)
	}
}

// TestReadBlobRefusesAHugeFile: a blob file grown past MaxWholeBlob (here
// a sparse file of 4 GiB, which costs no disk) is refused by its size,
// before any of it is read or memory is taken for it.
func TestReadBlobRefusesAHugeFile(t *testing.T) {
	l, err := ledger.Init(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := l.PutBlobBytes([]byte("manifest"))
	if err != nil {
		t.Fatal(err)
	}
	h := d.Hex()
	path := filepath.Join(l.Dir(), "blobs", h[:2], h)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 4<<30); err != nil {
		t.Fatal(err)
	}
	_, err = l.ReadBlob(d)
	if err == nil || !strings.Contains(err.Error(), "more than the 1073741824 this reader takes into memory") {
		t.Fatalf("a 4 GiB blob file: %v, want it refused by its size", err)
	}
}
