package untrusted

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs read and fails the test, instead of hanging it, when read
// does not return within a generous deadline (a FIFO opened for reading
// blocks until a writer comes).
func within(t *testing.T, read func() ([]byte, error)) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := read()
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(20 * time.Second):
		t.Fatal("the read never returned")
		return nil, nil
	}
}

// files makes a directory of every kind of path the readers must refuse,
// and two they must read.
func files(t *testing.T) (dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok", []byte("four"))
	write("limit", bytes.Repeat([]byte("x"), 1000))
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"zero": "/dev/zero", "escape": filepath.Join(outside, "secret"), "inside": "ok"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sparse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "sparse"), 4<<30); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	return dir, outside
}

// TestReadFile: a user's file is read when it is a regular file (through
// a symbolic link too) within the cap, and refused, naming it and what it
// is, otherwise, without blocking on a FIFO or reading a device.
func TestReadFile(t *testing.T) {
	dir, _ := files(t)
	for _, tc := range []struct {
		name  string
		limit int64
		want  string // the content, or the error's words
		err   error
	}{
		{"ok", 10, "four", nil},
		{"inside", 10, "four", nil},
		{"escape", 10, "outside", nil}, // a user's own link may lead anywhere
		{"limit", 1000, strings.Repeat("x", 1000), nil},
		{"limit", 999, "is 1000 B, too large: rlgate reads at most 999 B", ErrTooLarge},
		{"sparse", 16 << 20, "is 4 GiB, too large: rlgate reads at most 16 MiB", ErrTooLarge},
		{"fifo", 10, "is a named pipe (FIFO), not a regular file", ErrNotRegular},
		{"zero", 10, "is a device, not a regular file", ErrNotRegular},
		{"sub", 10, "is a directory, not a regular file", ErrNotRegular},
	} {
		path := filepath.Join(dir, tc.name)
		b, err := within(t, func() ([]byte, error) { return ReadFile(path, tc.limit) })
		switch {
		case tc.err == nil && (err != nil || string(b) != tc.want):
			t.Errorf("ReadFile(%s, %d) = %q, %v; want %q", tc.name, tc.limit, b, err, tc.want)
		case tc.err != nil && (!errors.Is(err, tc.err) || !strings.Contains(err.Error(), path+" "+tc.want)):
			t.Errorf("ReadFile(%s, %d): %v; want %q (%v)", tc.name, tc.limit, err, tc.want, tc.err)
		}
	}
}

// TestReadFileIn: a file in a directory handed over is read only when it
// is a regular file inside it, never through a symbolic link, whether it
// leads to a device, outside, or inside.
func TestReadFileIn(t *testing.T) {
	dir, _ := files(t)
	for _, tc := range []struct {
		name  string
		limit int64
		want  string
		err   error
	}{
		{"ok", 10, "four", nil},
		{"limit", 999, "is 1000 B, too large: rlgate reads at most 999 B", ErrTooLarge},
		{"sparse", 16 << 20, "is 4 GiB, too large: rlgate reads at most 16 MiB", ErrTooLarge},
		{"fifo", 10, "is a named pipe (FIFO), not a regular file", ErrNotRegular},
		{"zero", 10, "is a symbolic link, not a regular file", ErrNotRegular},
		{"escape", 10, "is a symbolic link, not a regular file", ErrNotRegular},
		{"inside", 10, "is a symbolic link, not a regular file", ErrNotRegular},
		{"out/secret", 10, "path escapes from parent", nil},
		{"../" + filepath.Base(dir) + "/ok", 10, "path escapes from parent", nil},
	} {
		b, err := within(t, func() ([]byte, error) { return ReadFileIn(dir, tc.name, tc.limit) })
		path := filepath.Join(dir, tc.name)
		t.Logf("%s: %v", tc.name, err)
		switch {
		case tc.name == "ok" && (err != nil || string(b) != tc.want):
			t.Errorf("ReadFileIn(%s, %d) = %q, %v; want %q", tc.name, tc.limit, b, err, tc.want)
		case tc.name == "ok":
		case err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || !strings.Contains(err.Error(), path+" ") && !strings.Contains(err.Error(), path+":") || !strings.Contains(err.Error(), tc.want):
			t.Errorf("ReadFileIn(%s, %d) = %q, %v; want an error naming %s: %q", tc.name, tc.limit, b, err, path, tc.want)
		}
	}
}

// TestReadFileNoSize: a file that reports no size (Linux's /proc files
// report 0) is read whole under the cap, growing the buffer from its
// start, and refused once more than the cap has come.
func TestReadFileNoSize(t *testing.T) {
	const path = "/proc/self/status" // about 1.5 KiB, size 0
	b, err := ReadFile(path, 1<<20)
	if err != nil || len(b) <= 512 || !bytes.Contains(b, []byte("\nPid:")) {
		t.Fatalf("ReadFile(%s) = %d bytes, %v", path, len(b), err)
	}
	if _, err := ReadFile(path, 100); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path+" grew while it was read, too large: rlgate reads at most 100 B") {
		t.Errorf("ReadFile(%s, 100): %v", path, err)
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 16 << 20: "16 MiB", 4 << 30: "4 GiB", 4<<30 + 1<<29: "4.5 GiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
