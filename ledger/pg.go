package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// A PostgreSQL ledger keeps its tables in a PostgreSQL database and its
// blobs in a local directory, named by the URL's blobs parameter:
// postgres://USER@HOST/DB?blobs=/srv/rlgate. The directory is laid out as
// a ledger directory without ledger.db (blobs/). Run locks are advisory
// locks in the server (pgLockRun), which every host sees.
// Everything else (entries, chain, canonical bodies, derived tables,
// verify) is the SQLite ledger's, through the same code: the SQL is
// written once, and pgConn runs it on PostgreSQL.

// pgBlobsParam is the URL parameter naming a PostgreSQL ledger's local
// directory; it is removed before the URL reaches the driver.
const pgBlobsParam = "blobs"

// pgDriverName is the database/sql driver of PostgreSQL ledgers.
const pgDriverName = "rlgate-pgx"

func init() { sql.Register(pgDriverName, pgDriver{}) }

// IsPostgres reports whether loc names a PostgreSQL ledger (a postgres://
// or postgresql:// URL) rather than a directory.
func IsPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// WithBlobs returns the PostgreSQL ledger URL loc with dir as its local
// directory, unless loc names one already; a directory is returned as it is.
func WithBlobs(loc, dir string) string {
	if !IsPostgres(loc) || dir == "" {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil || u.Query().Has(pgBlobsParam) {
		return loc // an unparsable URL is refused when opened
	}
	q := u.Query()
	q.Set(pgBlobsParam, dir)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgLocation splits a PostgreSQL ledger URL into what the driver connects
// to, the local directory, the blob store (blobs/ in the local directory,
// or an S3 bucket whose cache is the local directory; nil when the URL
// names none) and the URL to show (password hidden). A read-only open asks the server to refuse every write.
func pgLocation(loc string, readOnly bool) (conn, dir, shown string, blobs blobStore, err error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", "", "", nil, &Error{Op: "open ledger", Err: err, Hint: "give --ledger as postgres://USER@HOST/DB"}
	}
	q := u.Query()
	dir = q.Get(pgBlobsParam)
	q.Del(pgBlobsParam)
	u.RawQuery = q.Encode()
	shown = u.Redacted()
	if dir != "" { // else the one the ledger records (pgBlobStore)
		if blobs, dir, err = blobStoreAt(dir, shown); err != nil {
			return "", "", "", nil, err
		}
	}
	if readOnly {
		q.Set("default_transaction_read_only", "on")
	}
	u.RawQuery = q.Encode()
	return u.String(), dir, shown, blobs, nil
}

// EnvBlobs names the environment variable that gives a PostgreSQL
// ledger's blob store (a local directory or s3://BUCKET/PREFIX) when
// --blobs does not.
const EnvBlobs = "RLGATE_BLOBS"

// pgDDL creates a PostgreSQL ledger's tables: coreDDL and derivedDDL with
// PostgreSQL's types (BIGINT for INTEGER, BYTEA for BLOB, DOUBLE PRECISION
// for REAL) and every text compared byte by byte (COLLATE "C"), as SQLite
// compares it, so that queries and verify's row comparisons order rows
// alike. meta also holds schema_version, SQLite's user_version.
var pgDDL = []string{
	`CREATE TABLE meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT COLLATE "C" NOT NULL)`,
	`CREATE TABLE entries (seq BIGINT PRIMARY KEY, prev TEXT COLLATE "C" NOT NULL, hash TEXT COLLATE "C" NOT NULL,
		kind TEXT COLLATE "C" NOT NULL, run TEXT COLLATE "C" NOT NULL, at TEXT COLLATE "C" NOT NULL,
		blobs TEXT COLLATE "C" NOT NULL, body TEXT COLLATE "C" NOT NULL)`,
	`CREATE INDEX entries_kind ON entries(kind, seq)`,
	`CREATE INDEX entries_run ON entries(run, seq)`,
	`CREATE TABLE blob_refs (digest TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (digest, seq))`,
	`CREATE TABLE runs (run TEXT COLLATE "C" PRIMARY KEY, stage TEXT COLLATE "C" NOT NULL, status TEXT COLLATE "C" NOT NULL,
		started_seq BIGINT NOT NULL, started_at TEXT COLLATE "C" NOT NULL, ended_seq BIGINT, ended_at TEXT COLLATE "C", exit_code BIGINT)`,
	`CREATE TABLE artifacts (seq BIGINT NOT NULL, run TEXT COLLATE "C" NOT NULL, role TEXT COLLATE "C" NOT NULL,
		name TEXT COLLATE "C" NOT NULL, kind TEXT COLLATE "C" NOT NULL, digest TEXT COLLATE "C" NOT NULL,
		manifest TEXT COLLATE "C" NOT NULL, PRIMARY KEY (seq, role, name))`,
	`CREATE INDEX artifacts_digest ON artifacts(digest)`,
	`CREATE TABLE metrics (run TEXT COLLATE "C" NOT NULL, key TEXT COLLATE "C" NOT NULL, seq BIGINT NOT NULL,
		n BIGINT NOT NULL, steps BYTEA NOT NULL, vals BYTEA NOT NULL, PRIMARY KEY (run, key, seq))`,
	`CREATE TABLE outcomes (run TEXT COLLATE "C" NOT NULL, task_id TEXT COLLATE "C" NOT NULL, sample BIGINT NOT NULL,
		correct BIGINT NOT NULL, reward DOUBLE PRECISION, seq BIGINT NOT NULL, PRIMARY KEY (run, task_id, sample))`,
}

// pgIndexes are the indexes pgDDL creates, primary keys' included.
var pgIndexes = []string{"artifacts_digest", "artifacts_pkey", "blob_refs_pkey", "entries_kind", "entries_pkey",
	"entries_run", "meta_pkey", "metrics_pkey", "outcomes_pkey", "runs_pkey"}

// pgLockKey is the advisory lock every write transaction of a PostgreSQL
// ledger takes first, so appenders on any host take turns and each reads
// the head inside its own transaction.
const pgLockKey = applicationID

// pgRunLockKey is the key of run's advisory lock (pg_advisory_lock's
// bigint form): the first 8 bytes, big-endian, of BLAKE3 over "rlgate run
// lock", the ledger id and the run id, each followed by a zero byte. Every
// rlgate that records runs in one ledger MUST compute the same key.
func (l *Ledger) pgRunLockKey(run string) int64 {
	d := Sum([]byte("rlgate run lock\x00" + l.id + "\x00" + run + "\x00"))
	return int64(binary.BigEndian.Uint64(d[:8]))
}

// pgLockRun tries to take run's session advisory lock, on a connection of
// its own that holds it until release. The server drops the lock when that
// connection dies, however the process ended, which is how a later open,
// on any host, tells a run still being recorded from one whose recorder
// was killed. ok is false, without error, when another session holds it.
func (l *Ledger) pgLockRun(ctx context.Context, run string) (release func(), ok bool, err error) {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	key := l.pgRunLockKey(run)
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", key).Scan(&ok); err != nil || !ok {
		conn.Close()
		return nil, false, err
	}
	return func() {
		if _, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(?)", key); err != nil {
			// The session may still hold the lock: close it rather than
			// return it to the pool.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, true, nil
}

// pgDownHint says what to do when the PostgreSQL server could not be
// reached or went away during a command.
const pgDownHint = "check that the PostgreSQL server is running and reachable, then run the command again " +
	"(a write it cut off committed whole or not at all; rlgate head shows where the chain ends)"

// pgConnLost turns err into an Error naming the ledger and what to do when
// it says the server could not be reached or went away (refused or reset
// connections, a server shutting down, a connection closed mid-query); ok
// is false for any other error, a missing blob's included.
func (l *Ledger) pgConnLost(op string, err error) (lost *Error, ok bool) {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	var oe *net.OpError
	var errno syscall.Errno
	var why string
	switch {
	case errors.Is(err, ErrBlobMissing):
		return nil, false // the blob store's error, however it failed
	case errors.As(err, &pe):
		if !strings.HasPrefix(pe.Code, "08") && !strings.HasPrefix(pe.Code, "57P") {
			return nil, false // not connection_exception, admin or crash shutdown
		}
		why = pe.Message
	case errors.As(err, &oe):
		why = oe.Err.Error()
		if errors.As(oe.Err, &errno) {
			why = errno.Error() // "connection refused", not the addresses again
		}
	case errors.As(err, &ce), errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, driver.ErrBadConn):
		why = "connection closed"
	default:
		return nil, false
	}
	return &Error{Op: op, Path: l.shown, Err: fmt.Errorf("%w (%s)", ErrServerGone, why), Hint: pgDownHint}, true
}

// pgRefused turns err into an Error of one line when the server refused
// the connection's login: authentication failed for the user (SQLSTATE
// class 28: a wrong password, no pg_hba.conf entry) or the database does
// not exist (3D000). pgx would print a line for every address and
// protocol it tried, a refused TLS attempt included; this names the user,
// host and database, never the password. ok is false for any other error.
func (l *Ledger) pgRefused(op string, err error) (refused *Error, ok bool) {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	if !errors.As(err, &pe) || !errors.As(err, &ce) || ce.Config == nil {
		return nil, false
	}
	cfg := ce.Config
	host := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	switch {
	case strings.HasPrefix(pe.Code, "28"):
		return &Error{Op: op, Path: l.shown, Err: fmt.Errorf("%w for user %q at %s", ErrAuthFailed, cfg.User, host),
			Hint: "check the user and password in the URL (or PGPASSWORD, ~/.pgpass) and that the server's pg_hba.conf lets the user in"}, true
	case pe.Code == "3D000": // invalid_catalog_name
		return &Error{Op: op, Path: l.shown, Err: fmt.Errorf("database %q does not exist at %s", cfg.Database, host),
			Hint: "createdb " + cfg.Database + " on that server, or name an existing database in the URL"}, true
	}
	return nil, false
}

// createPG creates a PostgreSQL ledger in the database loc names, which
// must hold none: the tables, meta and the first entry (genesis, when
// given, as in create) commit in one transaction, so a failure leaves
// nothing. The local directory is created when missing.
func createPG(ctx context.Context, loc, id string, genesis *Entry) (*Ledger, error) {
	conn, dir, shown, blobs, err := pgLocation(loc, false)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(pgDriverName, conn)
	if err != nil {
		return nil, err
	}
	if blobs == nil {
		db.Close()
		return nil, errNoBlobStore(shown)
	}
	l := &Ledger{dir: dir, db: db, id: id, pg: true, shown: shown, blobs: blobs}
	fail := func(err error, hint string) (*Ledger, error) {
		db.Close()
		if refused, ok := l.pgRefused("init ledger", err); ok {
			return nil, refused
		}
		return nil, &Error{Op: "init ledger", Path: shown, Err: err, Hint: hint}
	}
	if _, err := l.pgFormat(ctx); err == nil {
		return fail(ErrExists, "use it as it is, or give --ledger another database")
	} else if !errors.Is(err, ErrNoLedger) {
		return fail(err, "check that the PostgreSQL server is running and the URL is right")
	}
	if err := os.MkdirAll(filepath.Join(dir, blobsDir, tmpDir), 0o755); err != nil {
		return fail(err, "check that "+dir+" (--blobs, or --cache for S3) is writable")
	}
	if err := blobs.check(ctx); err != nil {
		db.Close()
		return nil, err
	}
	err = l.withTx(ctx, func(tx *sql.Tx) error {
		return l.initTx(ctx, tx, pgDDL, map[string]string{"schema_version": strconv.Itoa(SchemaVersion), pgBlobStoreKey: blobLocation(blobs, dir)}, genesis)
	})
	if err != nil {
		return fail(err, "")
	}
	return l, nil
}

// openPG opens the PostgreSQL ledger loc names; see open.
func openPG(ctx context.Context, loc string, readOnly bool) (*Ledger, error) {
	conn, dir, shown, blobs, err := pgLocation(loc, readOnly)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(pgDriverName, conn)
	if err != nil {
		return nil, err
	}
	l := &Ledger{dir: dir, db: db, pg: true, shown: shown, blobs: blobs}
	fail := func(err error, hint string) (*Ledger, error) {
		db.Close()
		if refused, ok := l.pgRefused("open ledger", err); ok {
			return nil, refused
		}
		if lost, ok := l.pgConnLost("open ledger", err); ok {
			return nil, lost
		}
		return nil, &Error{Op: "open ledger", Path: shown, Err: err, Hint: hint}
	}
	ver, err := l.pgFormat(ctx)
	switch {
	case errors.Is(err, ErrNoLedger):
		return fail(err, "rlgate init --ledger "+shown+" (with the same --blobs)")
	case err != nil:
		return fail(err, "check that the PostgreSQL server is running and the URL is right")
	case ver > SchemaVersion:
		return fail(fmt.Errorf("%w: schema %d, this rlgate reads %d", ErrSchemaTooNew, ver, SchemaVersion),
			"upgrade rlgate to a release that reads schema "+strconv.Itoa(ver))
	case ver < 1:
		return fail(fmt.Errorf("%w: schema %d", ErrSchemaUnsupported, ver), "")
	}
	if err := db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'ledger_id'").Scan(&l.id); err != nil {
		return fail(fmt.Errorf("%w: no ledger id: %v", ErrNotLedger, err), "")
	}
	if l.blobs, l.dir, err = l.pgBlobStore(ctx, blobs, dir); err != nil {
		db.Close()
		return nil, err
	}
	blobs, dir = l.blobs, l.dir
	if !readOnly {
		if err := os.MkdirAll(filepath.Join(dir, blobsDir, tmpDir), 0o755); err != nil {
			return fail(err, "check that "+dir+" (--blobs, or --cache for S3) is writable")
		}
	}
	if err := blobs.check(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if !readOnly {
		if err := l.recoverInterrupted(ctx); err != nil {
			return fail(fmt.Errorf("close interrupted runs: %w", err), "")
		}
	}
	return l, nil
}

// pgFormat reads the schema version from meta; ErrNoLedger when the
// database has no ledger tables.
func (l *Ledger) pgFormat(ctx context.Context) (int, error) {
	v, err := l.meta(ctx, l.db, "schema_version")
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table
		return 0, ErrNoLedger
	case errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("%w: meta has no schema_version", ErrNotLedger)
	case err != nil:
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: schema_version %q", ErrNotLedger, v)
	}
	return n, nil
}

// pgVerifySchema is verifySchema for PostgreSQL: every table and index
// pgDDL creates is present, and nothing else is in the ledger's schema
// (no other table, view, index, sequence or function, no trigger or rule).
func (l *Ledger) pgVerifySchema(ctx context.Context, rep *VerifyReport) (map[string]bool, error) {
	want := map[string]string{}
	for _, t := range append([]string{"meta", "entries"}, derivedNames()...) {
		want[t] = "table"
	}
	for _, ix := range pgIndexes {
		want[ix] = "index"
	}
	rows, err := l.db.QueryContext(ctx, `SELECT c.relname, c.relkind::text FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			rows.Close()
			return nil, err
		}
		have[name] = map[string]string{"r": "table", "i": "index", "v": "view", "m": "materialized view", "S": "sequence", "p": "table", "f": "foreign table"}[kind]
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) {
		rep.add(Finding{Severity: SeverityError, Check: "schema", Message: fmt.Sprintf(format, args...)})
	}
	missing := map[string]bool{}
	for name, typ := range want {
		if have[name] != typ {
			missing[name] = true
			bad("%s %s is missing", typ, name)
		}
	}
	for name, typ := range have {
		if _, ok := want[name]; !ok {
			bad("%s %s was not created by rlgate", typ, name)
		}
	}
	var extra []string
	rows, err = l.db.QueryContext(ctx, `SELECT 'trigger ' || tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
		UNION ALL SELECT 'rule ' || rulename FROM pg_rules WHERE schemaname = current_schema()
		UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var what string
		if err := rows.Scan(&what); err != nil {
			return nil, err
		}
		extra = append(extra, what)
	}
	for _, what := range extra {
		bad("%s was not created by rlgate", what)
	}
	return missing, rows.Err()
}

func derivedNames() []string {
	out := make([]string, len(derivedTables))
	for i, t := range derivedTables {
		out[i] = t.name
	}
	return out
}

// rebind turns the ledger's ? placeholders into PostgreSQL's $1, $2, ...
// (the ledger's SQL has no ? inside a string literal, but rebind skips
// those all the same).
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range q {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pgDriver opens pgConns.
type pgDriver struct{}

func (pgDriver) Open(name string) (driver.Conn, error) {
	c, err := stdlib.GetDefaultDriver().Open(name)
	if err != nil {
		return nil, err
	}
	return &pgConn{c.(*stdlib.Conn)}, nil
}

// pgConn is a pgx connection that runs the ledger's SQL as written for
// SQLite: ? placeholders, and arguments stored as SQLite stores them (a
// bool as 0 or 1, a NaN as NULL), so both databases hold the same rows.
type pgConn struct{ *stdlib.Conn }

func (c *pgConn) Prepare(q string) (driver.Stmt, error) { return c.Conn.Prepare(rebind(q)) }

func (c *pgConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(q))
}

func (c *pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(q), args)
}

func (c *pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(q), args)
}

func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case bool:
		nv.Value = int64(0)
		if v {
			nv.Value = int64(1)
		}
	case float64:
		if math.IsNaN(v) {
			nv.Value = nil
		}
	}
	return nil
}
