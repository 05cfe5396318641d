//go:build !unix

package ledger

import "os"

// Without flock, a lock file only marks a run as recorded here; a killed
// recorder's runs then stay "running" until closed by hand.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

func tryLockFile(string) (*os.File, error) { return nil, os.ErrPermission }

func unlockFile(f *os.File, remove bool) {
	if remove {
		os.Remove(f.Name())
	}
	f.Close()
}
