//go:build unix

package ledger

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile creates path and takes an exclusive lock on it, failing if
// another process holds it.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w (is the same run being recorded by another process?)", path, err)
	}
	return f, nil
}

// tryLockFile locks an existing lock file without creating it.
func tryLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// unlockFile releases the lock, removing the file first when remove is set
// so no other process can lock a file that is about to vanish.
func unlockFile(f *os.File, remove bool) {
	if remove {
		os.Remove(f.Name())
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
