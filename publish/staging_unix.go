//go:build unix

package publish

import (
	"errors"
	"os"
	"syscall"
)

// A staging directory a running publish holds is locked, so the others
// can be swept.
const sweepable = true

// lockDir takes an exclusive flock on directory dir without waiting;
// errLocked when another process holds it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return f, nil
}
