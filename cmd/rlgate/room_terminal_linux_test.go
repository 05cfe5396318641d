package main

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRoomIsTerminal: a progress bar is redrawn only on a terminal. /dev/null
// is a character device but no terminal, which a mode-bit check took for one.
func TestRoomIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pty := roomOpenPty(t)
	for _, tt := range []struct {
		name string
		f    *os.File
		want bool
	}{{"dev-null", null, false}, {"pipe", w, false}, {"pty", pty, true}} {
		if got := isTerminal(tt.f); got != tt.want {
			t.Errorf("isTerminal(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// roomOpenPty opens the terminal side of a new pseudo-terminal.
func roomOpenPty(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v (a pseudo-terminal is needed to test the terminal check)", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}
