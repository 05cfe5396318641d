package ledger

import "errors"

var (
	// ErrNoLedger is returned when the ledger directory or its database does
	// not exist.
	ErrNoLedger = errors.New("no ledger here")
	// ErrExists is returned by Init when the directory already holds a ledger.
	ErrExists = errors.New("a ledger already exists")
	// ErrNotEmpty is returned by Init for a directory that holds files but
	// no ledger: a ledger gets a directory of its own.
	ErrNotEmpty = errors.New("directory is not empty")
	// ErrInterruptedInit is returned for a ledger.db without any schema, as
	// an init interrupted by an earlier rlgate (one that created ledger.db
	// in place) left it.
	ErrInterruptedInit = errors.New("ledger.db is empty: an interrupted rlgate init left it, and it holds no ledger")
	// ErrNotLedger is returned when ledger.db is not a SQLite database or is
	// one that rlgate did not create.
	ErrNotLedger = errors.New("not an rlgate ledger")
	// ErrSchemaTooNew is returned when the ledger was written by a newer
	// rlgate whose schema this build cannot read.
	ErrSchemaTooNew = errors.New("ledger schema is newer than this rlgate supports")
	// ErrSchemaUnsupported is returned for a schema version below the
	// supported range, such as an interrupted init.
	ErrSchemaUnsupported = errors.New("ledger schema version is not supported")
	// ErrNotFound is returned when an entry or blob asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous is returned when a hash prefix names more than one entry.
	ErrAmbiguous = errors.New("ambiguous hash prefix")
	// ErrBlobCorrupt is returned when a blob's bytes do not hash to its name.
	ErrBlobCorrupt = errors.New("blob content does not match its digest")
	// ErrBlobNotRegular is returned when a blob's file is not a regular file
	// (a FIFO, a device, a directory, a symlink): reading it might never end.
	ErrBlobNotRegular = errors.New("blob is not a regular file")
	// ErrBlobMissing is returned by Append when an entry names a blob that is
	// not in the store: blobs must be durable before the entry naming them.
	ErrBlobMissing = errors.New("entry references a blob that is not stored")
	// ErrRunExists is returned by StartRun for a run id the ledger already has.
	ErrRunExists = errors.New("run id already in the ledger")
	// ErrRunLocked is returned by StartRun and ResumeRun on a PostgreSQL
	// ledger when another process, on any host, holds the run's lock.
	ErrRunLocked = errors.New("another process is recording this run")
	// ErrServerGone is returned when a PostgreSQL ledger's server could not
	// be reached or went away during a command.
	ErrServerGone = errors.New("the PostgreSQL server went away or cannot be reached")
	// ErrTampered is returned when an entry a decision would read does not
	// match its hash or its link to the entry before it (see Checked).
	ErrTampered = errors.New("the ledger's entries were changed after they were written")
	// ErrReadOnlyView is returned by Append on a checked view (see Checked).
	ErrReadOnlyView = errors.New("a checked view of a ledger is read-only")
	// ErrAuthFailed is returned when a PostgreSQL server refused the
	// ledger URL's user: a wrong password, or one pg_hba.conf keeps out.
	ErrAuthFailed = errors.New("authentication failed")
	// ErrBadRecord is returned when a record's kind, run or body is invalid.
	ErrBadRecord = errors.New("invalid record")
	// ErrDiverged is returned by Copy when the destination is not an
	// earlier copy of the source: another ledger, a chain that differs
	// from the source's at some seq, or one that changed during the copy.
	ErrDiverged = errors.New("the ledgers have diverged")
	// ErrDestinationAhead is returned by Copy when the destination already
	// holds every entry of the source and more.
	ErrDestinationAhead = errors.New("the destination has entries the source lacks")
)

// Error is an error a user must act on: what was being done, to which path,
// why it failed, and what to try next. It prints as
// "open ledger /x: no ledger here. Try: rlgate init --ledger /x".
type Error struct {
	Op   string
	Path string
	Err  error
	Hint string
}

func (e *Error) Error() string {
	s := e.Op
	if e.Path != "" {
		s += " " + e.Path
	}
	s += ": " + e.Err.Error()
	if e.Hint != "" {
		s += ". Try: " + e.Hint
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }
