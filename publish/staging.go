package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// A bundle is built in a staging directory beside its target, named
// ".<target>.publish-<random>", and renamed into place when complete.
// The publish that builds it holds a lock on it (lockDir), so a staging
// directory nobody holds was left by a publish that was killed: the next
// publish to the same target deletes it (sweepStaging).
func stagingPattern(to string) string { return "." + filepath.Base(to) + ".publish-*" }

// isStagingName tells whether name is one of to's staging directories:
// the pattern's prefix followed by os.MkdirTemp's random digits.
func isStagingName(to, name string) bool {
	rest, ok := strings.CutPrefix(name, strings.TrimSuffix(stagingPattern(to), "*"))
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// newStaging makes and locks a staging directory for to, first making
// to's missing parents. The lock is released by closing the file, or by
// the process's end, however it ends.
func newStaging(to string) (string, *os.File, error) {
	parent := filepath.Dir(to)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, fmt.Errorf("publish: make the parent of --to: %w", err)
	}
	for range 3 {
		tmp, err := os.MkdirTemp(parent, stagingPattern(to))
		if err != nil {
			return "", nil, fmt.Errorf("publish: %w", err)
		}
		lock, err := lockDir(tmp)
		if err != nil {
			return "", nil, fmt.Errorf("publish: lock %s: %w", tmp, err)
		}
		// Another publish's sweep may have taken tmp between MkdirTemp and
		// the lock: then it is gone, and a new one is made.
		if _, err := os.Stat(tmp); err == nil {
			return tmp, lock, nil
		}
		lock.Close()
	}
	return "", nil, fmt.Errorf("publish: staging directories beside %s keep vanishing; is another rlgate publish to it running?", to)
}

// sweepStaging deletes the staging directories of to that no running
// publish holds: what a killed publish left (a half-copied checkpoint, a
// bundle never renamed into place).
func sweepStaging(to string) error {
	if !sweepable {
		return nil
	}
	ents, err := os.ReadDir(filepath.Dir(to))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !isStagingName(to, e.Name()) {
			continue // a symbolic link named so is not followed
		}
		p := filepath.Join(filepath.Dir(to), e.Name())
		lock, err := lockDir(p)
		if errors.Is(err, errLocked) || errors.Is(err, fs.ErrNotExist) {
			continue // a publish running now, or one that just finished
		}
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		err = os.RemoveAll(p)
		lock.Close()
		if err != nil {
			return &ledger.Error{Op: "publish: delete the staging directory a killed publish left", Path: p, Err: err, Hint: "delete it by hand"}
		}
	}
	return nil
}

// errLocked is lockDir's error for a directory another process holds.
var errLocked = errors.New("held by another process")

// EnvCrashPoint names a point of Publish at which the process kills
// itself with SIGKILL: "staged" (the bundle built, not yet in place) or
// "placed" (in place, its entry not yet written). Tests set it to prove
// that the next publish finishes what a killed one left.
const EnvCrashPoint = "RLGATE_TEST_PUBLISH_KILL"

func crashPoint(name string) {
	if os.Getenv(EnvCrashPoint) == name {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
			time.Sleep(time.Minute) // until the signal lands
		}
	}
}
