package ledger_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// within runs fn and fails the test if it has not returned after a minute:
// the cases below used to block forever, and a hung test says nothing.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return", what)
	}
}

// TestBlobsMustBeRegularFiles: a blob replaced by a FIFO, or by a symlink
// to /dev/zero, is a finding for verify and an error for readers, never a
// read that does not end.
func TestBlobsMustBeRegularFiles(t *testing.T) {
	tests := []struct {
		name    string
		replace func(path string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, blobs := tamperFixture(t)
			path := filepath.Join(dir, "blobs", blobs[3].Hex()[:2], blobs[3].Hex())
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := tt.replace(path); err != nil {
				t.Fatal(err)
			}
			var rep *ledger.VerifyReport
			within(t, "verify", func() { rep = verifyDir(t, dir, ledger.VerifyOptions{}) })
			want := "(named by entry 5): blob is not a regular file: it is a"
			if rep.OK() || !strings.Contains(findings(rep), want) {
				t.Errorf("verify: want a finding %q, got:\n%s", want, findings(rep))
			}
			l, err := ledger.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			within(t, "ReadBlob", func() { _, err = l.ReadBlob(blobs[3]) })
			if !errors.Is(err, ledger.ErrBlobNotRegular) {
				t.Errorf("ReadBlob: got %v, want ErrBlobNotRegular", err)
			}
			within(t, "OpenBlob", func() { _, err = l.OpenBlob(blobs[3]) })
			if !errors.Is(err, ledger.ErrBlobNotRegular) {
				t.Errorf("OpenBlob: got %v, want ErrBlobNotRegular", err)
			}
		})
	}
}

// TestPutBlobReplacesCorruptCopy: storing bytes whose blob file is present
// but damaged repairs the file, so a new entry never names bad bytes.
func TestPutBlobReplacesCorruptCopy(t *testing.T) {
	l := ledgertest.New(t)
	b := []byte("trajectory bytes")
	d, err := l.PutBlobBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, blobFile(t, l, d), 3)
	if _, err := l.PutBlobBytes(b); err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadBlob(d)
	if err != nil || string(got) != string(b) {
		t.Fatalf("after storing the bytes again: %q, %v", got, err)
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: "log", Body: map[string]int{}, Blobs: []ledger.Digest{d}}); err != nil {
		t.Fatal(err)
	}
}

// TestAppendRefusesSpecialBlob: an entry cannot name a blob whose file is
// not a regular file.
func TestAppendRefusesSpecialBlob(t *testing.T) {
	l := ledgertest.New(t)
	d, err := l.PutBlobBytes([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	path := blobFile(t, l, d)
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(ctx, ledger.Record{Kind: "log", Body: map[string]int{}, Blobs: []ledger.Digest{d}})
	if !errors.Is(err, ledger.ErrBlobMissing) || !errors.Is(err, ledger.ErrBlobNotRegular) {
		t.Errorf("append naming a FIFO blob: got %v, want ErrBlobMissing and ErrBlobNotRegular", err)
	}
	os.Remove(path) // so the verify at cleanup sees a clean store
}
