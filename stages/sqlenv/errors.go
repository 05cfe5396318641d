package sqlenv

import (
	"errors"
	"fmt"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNoDatabase is returned when a database file does not exist or is
	// not a regular file: by the executor (a read-only open never creates
	// one), by a rollout checking its tasks' databases before any episode,
	// and by a grading checking the databases an import recorded. It is
	// the one sentinel for a missing database, here in the lowest package
	// that opens one.
	ErrNoDatabase = errors.New("no such database")

	// ErrEmptyStatement is returned when a query holds no statement at all,
	// only white space, comments or nothing.
	ErrEmptyStatement = errors.New("empty statement")

	// ErrMultipleStatements is returned when anything but white space and
	// comments follows the first statement, a second semicolon included, as
	// Python's sqlite3 module rules ("You can only execute one statement at
	// a time").
	ErrMultipleStatements = errors.New("more than one statement")

	// ErrNotReadOnly is returned when SQLite reports that a prepared
	// statement could write (sqlite3_stmt_readonly), before it runs.
	ErrNotReadOnly = errors.New("statement is not read-only")

	// ErrNotAuthorized is returned when the authorizer denied an action the
	// statement needs (SQLITE_AUTH); see Policy.
	ErrNotAuthorized = errors.New("not authorized")

	// ErrTooBig is returned when a statement, a string or a blob exceeds a
	// length limit (SQLITE_TOOBIG).
	ErrTooBig = errors.New("string, blob or statement too big")

	// ErrOutOfMemory is returned when SQLite could not allocate the memory
	// a statement needed (SQLITE_NOMEM), which under HeapHardLimit means
	// the statement, or the statements running beside it, asked for too
	// much.
	ErrOutOfMemory = errors.New("out of memory")

	// ErrNULByte is returned when a query contains a NUL byte, which SQLite
	// would silently treat as its end.
	ErrNULByte = errors.New("query contains a NUL byte")

	// ErrTimeout is returned when a query is interrupted because its
	// deadline passed; the error also matches context.DeadlineExceeded.
	ErrTimeout = errors.New("query timed out")

	// ErrClosed is returned when an Executor is used after Close.
	ErrClosed = errors.New("executor closed")

	// ErrMalformedTurn is returned, inside a *FormatError, when a model reply
	// does not follow the turn protocol.
	ErrMalformedTurn = errors.New("malformed turn")
)

// SQLError is an error SQLite reported while preparing or running a
// statement: a syntax error, a missing table, a denied action. Msg is
// SQLite's own message, which is what the policy sees in an observation.
type SQLError struct {
	Code int    // extended result code
	Msg  string // sqlite3_errmsg
}

func (e *SQLError) Error() string { return fmt.Sprintf("sqlite: %s (code %d)", e.Msg, e.Code) }

// Is maps the result codes callers act on to sentinels.
func (e *SQLError) Is(target error) bool {
	switch target {
	case ErrNotAuthorized:
		// A denied function fails with SQLITE_ERROR and this message.
		return e.Code&0xff == sqlite3.SQLITE_AUTH || strings.HasPrefix(e.Msg, "not authorized")
	case ErrTooBig:
		return e.Code&0xff == sqlite3.SQLITE_TOOBIG
	case ErrOutOfMemory:
		return e.Code&0xff == sqlite3.SQLITE_NOMEM
	}
	return false
}

// TimeoutError reports a query interrupted at its deadline. It matches
// ErrTimeout and wraps the context's error.
type TimeoutError struct {
	After time.Duration // how long the query had run when it was interrupted
	Err   error         // context.DeadlineExceeded
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("query timed out after %s", e.After.Round(time.Millisecond))
}

// Is makes the error match ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns the context's error.
func (e *TimeoutError) Unwrap() error { return e.Err }
