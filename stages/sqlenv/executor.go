package sqlenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// Options bound what one query may cost. A zero field takes its value
// from DefaultOptions.
type Options struct {
	// Timeout is the deadline of one Execute or Prepare call, on top of
	// the caller's context.
	Timeout time.Duration
	// MaxRows is how many rows a Result keeps; reading stops there and the
	// Result is marked Truncated.
	MaxRows int
	// MaxBytes caps the memory a Result's rows take: per row its slice
	// header (24 bytes), per value its Cell (40 bytes) and its text or
	// blob bytes. The row that would cross it is not kept. Counting the
	// structs, not just the data, is what bounds memory: a million rows of
	// 29 integers hold 232 MB of numbers but take 1.2 GB.
	MaxBytes int64
	// MaxSQLLength is the longest statement accepted, in bytes
	// (SQLITE_LIMIT_SQL_LENGTH).
	MaxSQLLength int
	// MaxValueLength is the largest string or blob SQLite may build while
	// running a query (SQLITE_LIMIT_LENGTH): randomblob(1e9) fails at once
	// instead of allocating a gigabyte.
	MaxValueLength int
	// MaxConns is the number of connections kept per database.
	MaxConns int
	// Immutable promises that no one writes the databases while they are
	// open (they are hashed inputs, frozen for a grading or a rollout), so
	// SQLite may skip file locking and journal checks on every query
	// (URI immutable=1), which is a large share of a short query's cost.
	Immutable bool
}

// DefaultOptions are the environment's budgets: 10 s per query, 10 000
// rows, 16 MiB of results, 100 kB statements, 8 MiB values, one
// connection per CPU and database.
func DefaultOptions() Options {
	return Options{
		Timeout:        10 * time.Second,
		MaxRows:        10_000,
		MaxBytes:       16 << 20,
		MaxSQLLength:   100_000,
		MaxValueLength: 8 << 20,
		MaxConns:       runtime.GOMAXPROCS(0),
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxRows <= 0 {
		o.MaxRows = d.MaxRows
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = d.MaxBytes
	}
	if o.MaxSQLLength <= 0 {
		o.MaxSQLLength = d.MaxSQLLength
	}
	if o.MaxValueLength <= 0 {
		o.MaxValueLength = d.MaxValueLength
	}
	if o.MaxConns <= 0 {
		o.MaxConns = d.MaxConns
	}
	return o
}

// Result is what a query returned: column names, typed rows in the order
// SQLite produced them, and whether a cap cut it short.
type Result struct {
	Columns   []string
	Rows      [][]Cell
	Truncated bool          // MaxRows or MaxBytes stopped reading
	Bytes     int64         // what the rows count against MaxBytes
	Elapsed   time.Duration // prepare to last row
}

// Executor runs read-only queries against SQLite files. It keeps a small
// pool of connections per database, so grading many queries against one
// database opens it once per worker, and it is safe for concurrent use.
type Executor struct {
	opts Options

	mu     sync.Mutex
	pools  map[string]*pool
	closed bool
}

// pool holds the connections of one database: idle ones, and a token in
// slots for every connection open.
type pool struct {
	path  string
	slots chan struct{}
	idle  chan *conn
}

// NewExecutor returns an Executor with opts, zero fields defaulted. The
// first one sets SQLite's process-wide heap limits (HeapSoftLimit,
// HeapHardLimit).
func NewExecutor(opts Options) *Executor {
	limitHeap()
	return &Executor{opts: opts.withDefaults(), pools: make(map[string]*pool)}
}

// SQLiteVersion is the version of the SQLite every query runs on: the
// library linked into this binary, so what SELECT sqlite_version() returns
// on any connection, known without opening a database.
func (e *Executor) SQLiteVersion() string { return sqlite3.SQLITE_VERSION }

// Options returns the options in force, defaults filled in, so a caller
// can record them.
func (e *Executor) Options() Options { return e.opts }

// Execute runs one read-only statement on the database at dbPath and
// returns its rows. Errors: ErrNoDatabase, ErrEmptyStatement,
// ErrMultipleStatements, ErrNotReadOnly, ErrNULByte, a *SQLError (which
// matches ErrNotAuthorized or ErrTooBig where it applies), a
// *TimeoutError, or the context's error.
func (e *Executor) Execute(ctx context.Context, dbPath, query string) (*Result, error) {
	return e.do(ctx, dbPath, query, true)
}

// Prepare compiles query without running it and reports the error
// Execute would report before the first row: whether the statement
// parses, names existing tables and columns, and passes the policy.
func (e *Executor) Prepare(ctx context.Context, dbPath, query string) error {
	_, err := e.do(ctx, dbPath, query, false)
	return err
}

func (e *Executor) do(ctx context.Context, dbPath, query string, rows bool) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	p, err := e.pool(dbPath)
	if err != nil {
		return nil, err
	}
	c, err := p.get(ctx, &e.opts)
	if err != nil {
		return nil, err
	}
	defer e.put(p, c)
	return c.run(ctx, query, &e.opts, rows)
}

// pool returns the pool of the database at dbPath, creating it.
func (e *Executor) pool(dbPath string) (*pool, error) {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", dbPath, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if p := e.pools[abs]; p != nil {
		return p, nil
	}
	// Checked here, not left to SQLite, for an error that says what is
	// wrong: a read-only open of a missing file fails with "unable to open
	// database file".
	if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open database %s: %w", dbPath, ErrNoDatabase)
	}
	p := &pool{
		path:  abs,
		slots: make(chan struct{}, e.opts.MaxConns),
		idle:  make(chan *conn, e.opts.MaxConns),
	}
	e.pools[abs] = p
	return p, nil
}

// get returns an idle connection, opens one if the pool has room, or
// waits for one to come back.
func (p *pool) get(ctx context.Context, o *Options) (*conn, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	select {
	case c := <-p.idle:
		return c, nil
	case p.slots <- struct{}{}:
		c, err := openConn(p.path, o)
		if err != nil {
			<-p.slots
			return nil, fmt.Errorf("open database %s: %w", p.path, err)
		}
		return c, nil
	case <-ctx.Done():
		return nil, contextError(ctx.Err(), 0)
	}
}

// put returns c to its pool, or closes it when the executor is closed.
func (e *Executor) put(p *pool, c *conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		c.close()
		<-p.slots
		return
	}
	p.idle <- c
}

// Close closes every idle connection; connections in use close when
// their query ends. The Executor cannot be used afterwards.
func (e *Executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, p := range e.pools {
		// put takes e.mu too, so nothing arrives while this drains.
		for len(p.idle) > 0 {
			(<-p.idle).close()
			<-p.slots
		}
	}
	return nil
}
