// Package usage is the error every workflow returns for a request that
// cannot be run as written (a flag's value out of its range, two options
// that exclude each other, a tasks path of the wrong kind): the caller's
// command line says what to change, so rlgate reports it as a usage error
// (exit 2, pointing at the help). Checking a request where it is used keeps
// one rule in one place for every command that makes the request.
package usage

import (
	"fmt"
	"math"
)

// Error is a request that cannot be run as written.
type Error struct{ Msg string }

func (e Error) Error() string { return e.Msg }

// Errorf formats an Error.
func Errorf(format string, args ...any) error { return Error{Msg: fmt.Sprintf(format, args...)} }

// Count refuses a whole-number flag value v outside [lo, hi], naming the
// flag and the range (hi math.MaxInt: no upper bound).
func Count(flag string, v, lo, hi int) error {
	switch {
	case v >= lo && v <= hi:
		return nil
	case hi == math.MaxInt:
		return Errorf("--%s %d: want %d or more", flag, v, lo)
	}
	return Errorf("--%s %d: want %d to %d", flag, v, lo, hi)
}

// Alpha refuses an --alpha outside (0, 1), naming the values it takes.
func Alpha(a float64) error {
	if !(a > 0 && a < 1) {
		return Errorf("--alpha %g: want a significance level between 0 and 1, such as 0.05 for 95%% intervals", a)
	}
	return nil
}

// First is the first of checks that failed, nil when none did.
func First(checks ...error) error {
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}
