package sqlenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// This file drives SQLite through its C API as modernc.org/sqlite/lib
// exports it, not through database/sql. The driver converts TEXT stored in
// a column declared DATE, DATETIME or TIMESTAMP into time.Time, with no way
// to turn that off, and the original text cannot be recovered from the
// time ("2010-07-19 19:12:12.0" comes back without its ".0"). Observations
// and comparators need the stored value itself. The C API also gives the
// statement tail (exactly one statement), sqlite3_stmt_readonly, the
// progress handler and the byte size of a value before it is copied.

// openFlags: read-only, URI file names (mode=ro), serialized so that
// sqlite3_interrupt from the watcher is safe.
const openFlags = sqlite3.SQLITE_OPEN_READONLY | sqlite3.SQLITE_OPEN_URI |
	sqlite3.SQLITE_OPEN_FULLMUTEX | sqlite3.SQLITE_OPEN_EXRESCODE

// progressOps is how many VM instructions run between two looks at the
// cancel flag: small enough that a deadline is met within milliseconds.
const progressOps = 1000

// ptrSize is the size of a C pointer.
const ptrSize = int(unsafe.Sizeof(uintptr(0)))

// conn is one read-only SQLite connection. It is used by one goroutine at
// a time (the pool hands it out); only the deadline watcher touches it
// concurrently, under mu, and only while running.
type conn struct {
	tls  *libc.TLS // for every call made by the goroutine using the conn
	itls *libc.TLS // for sqlite3_interrupt, called by the watcher under mu
	db   uintptr

	mu       sync.Mutex
	running  bool
	canceled atomic.Bool  // set by the watcher or the progress handler
	deadline atomic.Int64 // Unix nanoseconds; 0 for none
}

// conns maps a connection handle to its conn for progressCallback, which
// receives only the handle.
var conns sync.Map // uintptr → *conn

// cPtr views C memory (owned by SQLite or libc, never by Go, so the
// garbage collector neither moves nor frees it) as an unsafe.Pointer.
func cPtr(p uintptr) unsafe.Pointer { return unsafe.Add(nil, p) }

// cFunc turns a top-level Go function into the C function pointer
// modernc's transpiled SQLite calls (see https://golang.org/s/go11func).
func cFunc[T any](f T) uintptr { return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f})) }

// progressCallback aborts the running statement once it is canceled or
// past its deadline. It reads the clock itself rather than waiting for the
// watcher, which on a loaded machine may be scheduled late.
func progressCallback(_ *libc.TLS, db uintptr) int32 {
	v, ok := conns.Load(db)
	if !ok {
		return 0
	}
	c := v.(*conn)
	if c.canceled.Load() {
		return 1
	}
	if d := c.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
		c.canceled.Store(true)
		return 1
	}
	return 0
}

func authorizerCallback(_ *libc.TLS, _ uintptr, action int32, z1, z2, _, _ uintptr) int32 {
	if Allowed(action, goString(z1), goString(z2)) {
		return sqlite3.SQLITE_OK
	}
	return sqlite3.SQLITE_DENY
}

func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	return libc.GoString(p)
}

// openConn opens path read-only and installs limits, query_only, the
// authorizer and the progress handler before any query can run.
func openConn(path string, o *Options) (_ *conn, err error) {
	c := &conn{tls: libc.NewTLS(), itls: libc.NewTLS()}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	// NB: the file: prefix matters; without it SQLite ignores mode=ro.
	query := "mode=ro"
	if o.Immutable {
		query += "&immutable=1"
	}
	dsn := (&url.URL{Scheme: "file", Path: path, RawQuery: query}).String()
	zName, err := libc.CString(dsn)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, zName)
	pp := c.tls.Alloc(ptrSize)
	defer c.tls.Free(ptrSize)
	*(*uintptr)(cPtr(pp)) = 0
	rc := sqlite3.Xsqlite3_open_v2(c.tls, zName, pp, openFlags, 0)
	c.db = *(*uintptr)(cPtr(pp))
	if rc != sqlite3.SQLITE_OK {
		if c.db == 0 {
			return nil, &SQLError{Code: int(rc), Msg: goString(sqlite3.Xsqlite3_errstr(c.tls, rc))}
		}
		return nil, c.lastError(rc)
	}

	for _, l := range []struct{ id, v int32 }{
		{sqlite3.SQLITE_LIMIT_LENGTH, int32(o.MaxValueLength)},
		{sqlite3.SQLITE_LIMIT_SQL_LENGTH, int32(o.MaxSQLLength)},
		{sqlite3.SQLITE_LIMIT_ATTACHED, 0},
	} {
		sqlite3.Xsqlite3_limit(c.tls, c.db, l.id, l.v)
	}
	// A second lock on the door: query_only refuses writes even if a
	// statement were authorized and the file were writable.
	if err := c.exec("PRAGMA query_only = 1"); err != nil {
		return nil, fmt.Errorf("set query_only: %w", err)
	}
	if err := c.registerNaiveSums(); err != nil {
		return nil, err
	}
	if rc := sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, cFunc(authorizerCallback), 0); rc != sqlite3.SQLITE_OK {
		return nil, fmt.Errorf("install authorizer: %w", c.lastError(rc))
	}
	conns.Store(c.db, c)
	sqlite3.Xsqlite3_progress_handler(c.tls, c.db, progressOps, cFunc(progressCallback), c.db)
	return c, nil
}

// exec runs a statement of our own, before the authorizer is installed.
func (c *conn) exec(query string) error {
	z, err := libc.CString(query)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, z)
	if rc := sqlite3.Xsqlite3_exec(c.tls, c.db, z, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return c.lastError(rc)
	}
	return nil
}

func (c *conn) close() {
	if c.db != 0 {
		conns.Delete(c.db)
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	c.tls.Close()
	c.itls.Close()
}

// lastError builds the error for a failed call from the connection's
// error message.
func (c *conn) lastError(rc int32) error {
	code := sqlite3.Xsqlite3_extended_errcode(c.tls, c.db)
	if code == sqlite3.SQLITE_OK {
		code = rc
	}
	return &SQLError{Code: int(code), Msg: goString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))}
}

// watch arms the deadline: the progress handler aborts the statement once
// ctx's deadline passes or ctx ends, and when ctx ends sqlite3_interrupt
// also stops work between VM instructions that the handler does not see
// (a large sort). The returned func disarms it; after it returns no
// interrupt can reach a later statement.
func (c *conn) watch(ctx context.Context) (stop func()) {
	c.canceled.Store(false)
	c.deadline.Store(0)
	if d, ok := ctx.Deadline(); ok {
		c.deadline.Store(d.UnixNano())
	}
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	after := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running {
			c.canceled.Store(true)
			sqlite3.Xsqlite3_interrupt(c.itls, c.db)
		}
	})
	return func() {
		after()
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}
}

// run prepares query, checks that it is a single read-only statement and,
// when rows is set, steps it and reads the result within o's caps.
func (c *conn) run(ctx context.Context, query string, o *Options, rows bool) (*Result, error) {
	start := time.Now()
	if len(query) > o.MaxSQLLength {
		return nil, &SQLError{Code: sqlite3.SQLITE_TOOBIG, Msg: "statement too long"}
	}
	if strings.IndexByte(query, 0) >= 0 {
		return nil, ErrNULByte
	}
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, 0)
	}
	stop := c.watch(ctx)
	defer stop()

	zSQL, err := libc.CString(query)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, zSQL)
	pp := c.tls.Alloc(2 * ptrSize)
	defer c.tls.Free(2 * ptrSize)
	*(*uintptr)(cPtr(pp)) = 0
	rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, zSQL, int32(len(query)+1), pp, pp+uintptr(ptrSize))
	if rc != sqlite3.SQLITE_OK {
		return nil, c.stepError(ctx, rc, start)
	}
	stmt := *(*uintptr)(cPtr(pp))
	tail := query[*(*uintptr)(cPtr(pp + uintptr(ptrSize)))-zSQL:]
	if stmt == 0 {
		if blankSQL(tail) {
			return nil, ErrEmptyStatement
		}
		return nil, ErrMultipleStatements
	}
	defer sqlite3.Xsqlite3_finalize(c.tls, stmt)
	if !blankSQL(tail) {
		return nil, ErrMultipleStatements
	}
	if sqlite3.Xsqlite3_stmt_readonly(c.tls, stmt) == 0 {
		return nil, ErrNotReadOnly
	}
	if !rows {
		return nil, nil
	}

	n := int(sqlite3.Xsqlite3_column_count(c.tls, stmt))
	res := &Result{Columns: make([]string, n)}
	for i := range n {
		res.Columns[i] = goString(sqlite3.Xsqlite3_column_name(c.tls, stmt, int32(i)))
	}
	for {
		switch rc := sqlite3.Xsqlite3_step(c.tls, stmt); rc {
		case sqlite3.SQLITE_ROW:
			if len(res.Rows) >= o.MaxRows {
				res.Truncated = true
				res.Elapsed = time.Since(start)
				return res, nil
			}
			row, size := c.row(stmt, n, o.MaxBytes-res.Bytes)
			if row == nil {
				res.Truncated = true
				res.Elapsed = time.Since(start)
				return res, nil
			}
			res.Rows = append(res.Rows, row)
			res.Bytes += size
		case sqlite3.SQLITE_DONE:
			res.Elapsed = time.Since(start)
			return res, nil
		default:
			return nil, c.stepError(ctx, rc, start)
		}
	}
}

// row copies the current row, or returns nil when it would take more than
// budget bytes; a text or blob's size is read before it is copied.
func (c *conn) row(stmt uintptr, n int, budget int64) ([]Cell, int64) {
	row := make([]Cell, n)
	size := rowSize
	for i := range n {
		col := int32(i)
		switch sqlite3.Xsqlite3_column_type(c.tls, stmt, col) {
		case sqlite3.SQLITE_INTEGER:
			row[i] = Int(sqlite3.Xsqlite3_column_int64(c.tls, stmt, col))
		case sqlite3.SQLITE_FLOAT:
			row[i] = Real(sqlite3.Xsqlite3_column_double(c.tls, stmt, col))
		case sqlite3.SQLITE_TEXT:
			// column_text before column_bytes, as SQLite documents.
			p := sqlite3.Xsqlite3_column_text(c.tls, stmt, col)
			row[i].Kind = KindText
			if !c.copyBytes(&row[i], stmt, col, p, budget-size) {
				return nil, 0
			}
		case sqlite3.SQLITE_BLOB:
			p := sqlite3.Xsqlite3_column_blob(c.tls, stmt, col)
			row[i].Kind = KindBlob
			if !c.copyBytes(&row[i], stmt, col, p, budget-size) {
				return nil, 0
			}
		default:
			row[i] = Null()
		}
		size += row[i].size()
		if size > budget {
			return nil, 0
		}
	}
	return row, size
}

// copyBytes copies the n bytes at p into cell.Str unless n exceeds budget.
func (c *conn) copyBytes(cell *Cell, stmt uintptr, col int32, p uintptr, budget int64) bool {
	n := int(sqlite3.Xsqlite3_column_bytes(c.tls, stmt, col))
	if int64(n) > budget {
		return false
	}
	if p != 0 && n > 0 {
		cell.Str = string(unsafe.Slice((*byte)(cPtr(p)), n))
	}
	return true
}

// stepError turns a failed prepare or step into an error: a TimeoutError
// or the context's error when the watcher stopped the statement, otherwise
// SQLite's message.
func (c *conn) stepError(ctx context.Context, rc int32, start time.Time) error {
	if rc&0xff == sqlite3.SQLITE_INTERRUPT && c.canceled.Load() {
		err := ctx.Err()
		if err == nil { // the progress handler saw the deadline before the context did
			err = context.DeadlineExceeded
		}
		return contextError(err, time.Since(start))
	}
	return c.lastError(rc)
}

// contextError reports a deadline as a TimeoutError and passes any other
// cancellation through.
func contextError(err error, after time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &TimeoutError{After: after, Err: err}
	}
	return err
}

// blankSQL reports whether s holds only what SQLite skips between
// statements without being a statement: white space and comments. A
// semicolon is an (empty) statement, as Python's sqlite3 module counts it.
func blankSQL(s string) bool {
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f' || s[i] == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return true
			}
			i += j + 1
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return true // SQLite ends an unterminated comment at the end of input
			}
			i += 2 + j + 2
		default:
			return false
		}
	}
	return true
}
