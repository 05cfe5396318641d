// Package usage is the error every workflow returns for a request that
// cannot be run as written (a flag's value out of its range, two options
// that exclude each other, a tasks path of the wrong kind): the caller's
// command line says what to change, so rlgate reports it as a usage error
// (exit 2, pointing at the help). Checking a request where it is used keeps
// one rule in one place for every command that makes the request.
package usage

import "fmt"

// Error is a request that cannot be run as written.
type Error struct{ Msg string }

func (e Error) Error() string { return e.Msg }

// Errorf formats an Error.
func Errorf(format string, args ...any) error { return Error{Msg: fmt.Sprintf(format, args...)} }
