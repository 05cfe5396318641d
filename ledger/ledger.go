package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DefaultDir is where commands look for a ledger when neither --ledger nor
// RLGATE_LEDGER names one.
const DefaultDir = ".rlgate"

// EnvLedger names the environment variable every command reads for the
// ledger directory.
const EnvLedger = "RLGATE_LEDGER"

const (
	dbName   = "ledger.db"
	blobsDir = "blobs"
	tmpDir   = "tmp" // inside blobs/: blobs being written
)

// busyTimeoutMS is how long a writer waits for another process's write
// transaction. Stage processes append concurrently; a long wait is better
// than a lost entry.
const busyTimeoutMS = 60000

// Ledger is an open ledger directory. It is safe for concurrent use by
// several goroutines, and several processes may open the same directory.
type Ledger struct {
	dir string
	db  *sql.DB
	id  string
	// scratch, when set, is a temporary directory holding the database l
	// reads instead of the ledger's own (see OpenReadOnly); Close removes it.
	scratch string
	// pg is set for a PostgreSQL ledger (see pg.go), whose dir is its local
	// directory and shown its URL without the password.
	pg    bool
	shown string
	// blobs is the blob store: blobs/ in dir, or an S3 bucket (see s3.go).
	blobs blobStore
	// chk is set on a checked read-only view (see Checked), which refuses
	// appends; borrowed marks a view shared with its owner, who closes it.
	chk      *checkedIndex
	borrowed bool
}

// dsn builds the SQLite connection string. The file: prefix matters: without
// it modernc.org/sqlite ignores mode= and opens read-write. synchronous=FULL
// makes every commit durable on power loss, not just on a process crash.
// Mode "ro" refuses every write and sets none of the writer's pragmas;
// "ro-immutable" also reads without locks or WAL, for a database that
// nothing can be writing (see openDB).
func dsn(path, mode string) string {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMS)+")")
	switch mode {
	case "ro":
		q.Set("mode", "ro")
	case "ro-immutable":
		q.Set("mode", "ro")
		q.Set("immutable", "1")
	case "scratch":
		// A private copy nothing else opens, rebuilt whenever it is
		// needed: durability would only cost time.
		q.Set("mode", "rwc")
		q.Add("_pragma", "journal_mode(OFF)")
		q.Add("_pragma", "synchronous(OFF)")
	default:
		q.Set("mode", mode)
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Set("_txlock", "immediate")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Init creates a new ledger in dir, which must be missing or an empty
// directory: Init refuses one holding anything else, and never wipes a
// ledger. The ledger is built in a temporary directory beside dir
// (".<name>.init-*") and renamed into place, so a crash leaves either no
// ledger or a whole one; a leftover temporary directory holds nothing and
// may be deleted. dir may instead be a PostgreSQL ledger's URL (see
// IsPostgres): the ledger is then created in that database.
func Init(ctx context.Context, dir string) (*Ledger, error) {
	var idb [16]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, &Error{Op: "init ledger", Path: dir, Err: err}
	}
	return create(ctx, dir, hex.EncodeToString(idb[:]), nil)
}

// create is Init for a ledger with the given id. genesis, when not nil, is
// another ledger's first entry, which the new one copies (see Copy) instead
// of writing its own.
func create(ctx context.Context, dir, id string, genesis *Entry) (*Ledger, error) {
	if IsPostgres(dir) {
		return createPG(ctx, dir, id, genesis)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := checkInitTarget(ctx, dir); err != nil {
		return nil, err
	}
	fail := func(err error) (*Ledger, error) {
		return nil, &Error{Op: "init ledger", Path: dir, Err: err, Hint: "check that " + filepath.Dir(dir) + " is writable"}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".init-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp) // nothing left to remove once renamed
	if err := build(ctx, tmp, id, genesis); err != nil {
		return nil, &Error{Op: "init ledger", Path: dir, Err: err}
	}
	// An empty target goes first (os.Remove refuses one that gained files
	// meanwhile): a crash in between leaves no directory, not half a ledger.
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return fail(err)
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, dbName), "rw"))
	if err != nil {
		return nil, err
	}
	return &Ledger{dir: dir, db: db, id: id, blobs: localBlobs{filepath.Join(dir, blobsDir)}}, nil
}

// checkInitTarget accepts a missing or empty directory for a new ledger.
func checkInitTarget(ctx context.Context, dir string) error {
	des, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return &Error{Op: "init ledger", Path: dir, Err: err, Hint: "choose a new or empty directory with --ledger"}
	case len(des) == 0:
		return nil
	}
	dbPath := filepath.Join(dir, dbName)
	if _, err := os.Stat(dbPath); err == nil {
		if empty, err := emptyDatabase(ctx, dbPath); err == nil && empty {
			return interruptedInit("init ledger", dir)
		}
		return &Error{Op: "init ledger", Path: dir, Err: ErrExists,
			Hint: "use it as it is, or choose another directory with --ledger"}
	}
	names := make([]string, 0, 3)
	for _, de := range des[:min(len(des), 3)] {
		names = append(names, de.Name())
	}
	return &Error{Op: "init ledger", Path: dir, Err: fmt.Errorf("%w (it holds %s)", ErrNotEmpty, strings.Join(names, ", ")),
		Hint: "choose a new or empty directory with --ledger"}
}

// emptyDatabase reports whether the SQLite file at path has no schema at
// all: what an init interrupted before its transaction committed left,
// before Init built ledgers aside and renamed them into place.
func emptyDatabase(ctx context.Context, path string) (bool, error) {
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro"}).String())
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
	return n == 0, err
}

// interruptedInit is the error for a directory holding an empty ledger.db.
// The hint names the whole directory only when it holds nothing else.
func interruptedInit(op, dir string) error {
	hint := "remove " + dir + " (an empty ledger.db and blob store: nothing was recorded) and run rlgate init again"
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		switch de.Name() {
		case dbName, dbName + "-wal", dbName + "-shm", blobsDir:
		default:
			hint = "remove " + filepath.Join(dir, dbName) + " and " + filepath.Join(dir, blobsDir) +
				" (they hold nothing) and run rlgate init in a new or empty directory"
		}
	}
	return &Error{Op: op, Path: dir, Err: ErrInterruptedInit, Hint: hint}
}

// build creates a complete ledger in the empty directory dir and closes it,
// with everything synced to disk. Its first entry is genesis when given
// (copied, see create), else a new ledger.init entry.
func build(ctx context.Context, dir, id string, genesis *Entry) error {
	if err := os.MkdirAll(filepath.Join(dir, blobsDir, tmpDir), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // MkdirTemp made it 0700
		return err
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, dbName), "rwc"))
	if err != nil {
		return err
	}
	l := &Ledger{dir: dir, db: db, id: id, blobs: localBlobs{filepath.Join(dir, blobsDir)}}
	err = l.withTx(ctx, func(tx *sql.Tx) error {
		ddl := []string{fmt.Sprintf("PRAGMA application_id = %d", applicationID), coreDDL, derivedDDL}
		if err := l.initTx(ctx, tx, ddl, nil, genesis); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr // closing the last connection checkpoints the WAL into ledger.db
	}
	if err != nil {
		return err
	}
	for _, p := range []string{filepath.Join(dir, dbName), filepath.Join(dir, blobsDir, tmpDir), filepath.Join(dir, blobsDir), dir} {
		if err := syncDir(p); err != nil { // syncDir fsyncs any file it can open
			return err
		}
	}
	return nil
}

// initTx fills a new ledger's empty database in tx: it runs ddl, writes
// meta (the ledger id, the derived version and extra) and the first entry,
// genesis when given (copied, see create), else a new ledger.init entry.
func (l *Ledger) initTx(ctx context.Context, tx *sql.Tx, ddl []string, extra map[string]string, genesis *Entry) error {
	for _, s := range ddl {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	meta := map[string]string{"ledger_id": l.id, "derived_version": l.derivedVersion()}
	maps.Copy(meta, extra)
	for k, v := range meta {
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES (?, ?)", k, v); err != nil {
			return err
		}
	}
	if genesis != nil {
		return l.copyTx(ctx, tx, 0, Digest{}, []Entry{*genesis})
	}
	_, err := l.appendTx(ctx, tx, []Record{{Kind: records.KindInit, Body: InitBody{LedgerID: l.id, Schema: SchemaVersion}}}, nil)
	return err
}

// Open opens an existing ledger for reading and writing. It refuses a file
// that is not a ledger and a schema version outside the supported range,
// saying what to do instead. Commands that append use it: it rebuilds
// derived tables older than this build's and closes, as interrupted, every
// run whose recorder died. dir may instead be a PostgreSQL ledger's URL.
func Open(ctx context.Context, dir string) (*Ledger, error) { return open(ctx, dir, false) }

// OpenReadOnly opens an existing ledger for reading only. It appends no
// entry and never changes ledger.db (where the directory allows, SQLite
// adds its -shm index and an empty -wal), so it reads a ledger its user
// cannot write (another user's, an unpacked CI artifact, a read-only
// mount). A run whose recorder died stays marked running: closing it is
// left to the next Open. When the derived tables are older than this
// build's, it reads from a private copy of the database with the tables
// rebuilt, in a temporary directory that Close removes.
func OpenReadOnly(ctx context.Context, dir string) (*Ledger, error) { return open(ctx, dir, true) }

func open(ctx context.Context, dir string, readOnly bool) (*Ledger, error) {
	if IsPostgres(dir) {
		return openPG(ctx, dir, readOnly)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	dbPath := filepath.Join(dir, dbName)
	if _, err := os.Stat(dbPath); err != nil {
		return nil, &Error{Op: "open ledger", Path: dir, Err: ErrNoLedger,
			Hint: "rlgate init --ledger " + dir + " (or set --ledger / " + EnvLedger + " to an existing ledger)"}
	}
	l := &Ledger{dir: dir, blobs: localBlobs{filepath.Join(dir, blobsDir)}}
	if err := l.blobs.check(ctx); err != nil {
		return nil, err
	}
	if err := l.openDB(ctx, dbPath, readOnly); err != nil {
		return nil, err
	}
	if err := l.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'ledger_id'").Scan(&l.id); err != nil {
		l.Close()
		return nil, &Error{Op: "open ledger", Path: dbPath, Err: fmt.Errorf("%w: no ledger id: %v", ErrNotLedger, err)}
	}
	if readOnly {
		if err := l.readDerived(ctx); err != nil {
			l.Close()
			return nil, &Error{Op: "open ledger", Path: dbPath, Err: err,
				Hint: "set TMPDIR to a writable directory, or open the ledger once with a command that writes (rlgate run, rlgate hash --record) as a user who may write it"}
		}
		return l, nil
	}
	if err := l.upgradeDerived(ctx); err != nil {
		l.Close()
		return nil, &Error{Op: "open ledger", Path: dbPath, Err: err}
	}
	if err := l.recoverInterrupted(ctx); err != nil {
		l.Close()
		return nil, &Error{Op: "open ledger", Path: dbPath, Err: fmt.Errorf("close interrupted runs: %w", err)}
	}
	return l, nil
}

// openDB connects to the database and checks its format. Read-only, SQLite
// still needs the WAL's -wal and -shm files, and creates them when they are
// missing (a ledger whose last writer closed cleanly), which a directory
// the user cannot write refuses (SQLITE_READONLY_DIRECTORY). Without a
// -wal file no writer has anything uncheckpointed, so the database file
// alone holds every entry and is read as immutable: without locks, which
// is safe unless its owner starts writing, and checkpoints, while it is read.
func (l *Ledger) openDB(ctx context.Context, dbPath string, readOnly bool) error {
	mode := "rw"
	if readOnly {
		mode = "ro"
	}
	db, err := sql.Open("sqlite", dsn(dbPath, mode))
	if err != nil {
		return err
	}
	l.db = db
	err = l.checkFormat(ctx, dbPath)
	if err != nil && readOnly {
		if _, serr := os.Stat(dbPath + "-wal"); errors.Is(serr, fs.ErrNotExist) {
			db.Close()
			if l.db, err = sql.Open("sqlite", dsn(dbPath, "ro-immutable")); err != nil {
				return err
			}
			err = l.checkFormat(ctx, dbPath)
		}
	}
	if err != nil {
		l.db.Close()
	}
	return err
}

// readDerived makes the derived tables of a read-only ledger current: when
// they are older than this build's, it copies the database to a temporary
// directory, rebuilds them there and reads from the copy.
func (l *Ledger) readDerived(ctx context.Context) error {
	have, err := l.meta(ctx, l.db, "derived_version")
	if err != nil || have == strconv.Itoa(derivedVersion) {
		return err
	}
	stale := fmt.Errorf("derived tables are version %s, this rlgate reads %d, and a read-only ledger cannot be rebuilt in place", have, derivedVersion)
	if l.scratch, err = os.MkdirTemp("", "rlgate-read-"); err != nil {
		return fmt.Errorf("%w: %v", stale, err)
	}
	copyPath := filepath.Join(l.scratch, dbName)
	if _, err := l.db.ExecContext(ctx, "VACUUM INTO ?", copyPath); err != nil {
		return fmt.Errorf("%w: copy it: %v", stale, err)
	}
	db, err := sql.Open("sqlite", dsn(copyPath, "rw"))
	if err != nil {
		return err
	}
	l.db.Close()
	l.db = db
	if err := l.upgradeDerived(ctx); err != nil {
		return fmt.Errorf("%w: rebuild them in a copy: %v", stale, err)
	}
	return nil
}

// checkFormat reads the application id and schema version.
func (l *Ledger) checkFormat(ctx context.Context, dbPath string) error {
	var app, ver int64
	notLedger := func(why error) error {
		return &Error{Op: "open ledger", Path: dbPath, Err: fmt.Errorf("%w: %v", ErrNotLedger, why),
			Hint: "point --ledger at a directory made by rlgate init, or run rlgate init in a new directory"}
	}
	if err := l.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return notLedger(err)
	}
	if app != applicationID {
		if empty, err := emptyDatabase(ctx, dbPath); err == nil && empty {
			return interruptedInit("open ledger", l.dir)
		}
		return notLedger(fmt.Errorf("application_id is %#x, want %#x", app, applicationID))
	}
	if err := l.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&ver); err != nil {
		return notLedger(err)
	}
	switch {
	case ver > SchemaVersion:
		return &Error{Op: "open ledger", Path: dbPath, Err: fmt.Errorf("%w: schema %d, this rlgate reads %d", ErrSchemaTooNew, ver, SchemaVersion),
			Hint: "upgrade rlgate to a release that reads schema " + strconv.FormatInt(ver, 10)}
	case ver < 1:
		return &Error{Op: "open ledger", Path: dbPath, Err: fmt.Errorf("%w: schema %d (an interrupted rlgate init?)", ErrSchemaUnsupported, ver),
			Hint: "remove the directory if it holds nothing you need, and run rlgate init again"}
	}
	return nil
}

// checkBlobDir makes sure the blob store is a directory we can list, so a
// permissions problem shows up at open, not half-way through a stage.
func checkBlobDir(path string) error {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err == nil {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			if _, err = f.Readdirnames(1); errors.Is(err, io.EOF) {
				err = nil // empty, and readable
			}
			f.Close()
		}
	}
	if err != nil {
		return &Error{Op: "open blob store", Path: path, Err: err,
			Hint: "restore " + path + " as a readable and writable directory (blobs are never recreated from the database)"}
	}
	return nil
}

// upgradeDerived rebuilds the derived tables when meta gives them another
// version than this build's. They are pure functions of the entries, so a
// rebuild loses nothing, unless they were edited: it first compares them
// with a replay of the entries, and when they differ it leaves tables and
// meta as they are, for verify to report, rather than erase the evidence.
func (l *Ledger) upgradeDerived(ctx context.Context) error {
	have, err := l.meta(ctx, l.db, "derived_version")
	if err != nil {
		return err
	}
	if have == strconv.Itoa(derivedVersion) {
		return nil
	}
	return l.withTx(ctx, func(tx *sql.Tx) error {
		if have, err = l.meta(ctx, tx, "derived_version"); err != nil || have == strconv.Itoa(derivedVersion) {
			return err // another process rebuilt them meanwhile
		}
		if agree, err := derivedAgree(ctx, tx); err != nil || !agree {
			return err
		}
		if err := rebuildDerived(ctx, tx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'derived_version'", strconv.Itoa(derivedVersion))
		return err
	})
}

// derivedAgree reports whether the derived tables in tx hold what a replay
// of its entries gives. Only tables whose columns are this build's can be
// compared; one of another shape is an older version's, and is rebuilt.
func derivedAgree(ctx context.Context, tx *sql.Tx) (bool, error) {
	scratch, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return false, err
	}
	defer scratch.Close()
	scratch.SetMaxOpenConns(1)
	stx, err := scratch.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer stx.Rollback()
	if err := rebuildDerived(ctx, tx, stx); err != nil {
		return false, err
	}
	rep := &VerifyReport{}
	for _, t := range derivedTables {
		have, err := columns(ctx, tx, t.name)
		if err != nil {
			return false, err
		}
		want, err := columns(ctx, stx, t.name)
		if err != nil {
			return false, err
		}
		if have != want {
			continue
		}
		if err := compareTable(ctx, rep, t.name, t.order, tx, stx); err != nil {
			return false, err
		}
	}
	return rep.OK(), nil
}

// columns lists a table's column names and types ("" when it is absent).
func columns(ctx context.Context, q queryer, table string) (string, error) {
	var cols sql.NullString
	err := q.QueryRowContext(ctx, "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info(?)", table).Scan(&cols)
	return cols.String, err
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (l *Ledger) meta(ctx context.Context, q queryer, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	return v, err
}

// withTx runs fn in an immediate (write-locking) transaction; in
// PostgreSQL, one that first takes the ledger's advisory lock, held until
// it ends.
func (l *Ledger) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if l.chk != nil {
		return ErrReadOnlyView
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if l.pg {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(pgLockKey)); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Close closes the database and removes a read-only open's private copy.
// Blobs need no closing.
func (l *Ledger) Close() error {
	if l.borrowed {
		return nil
	}
	err := l.db.Close()
	if l.scratch != "" {
		os.RemoveAll(l.scratch)
	}
	return err
}

// location names the ledger in messages: its directory, or its URL
// without the password.
func (l *Ledger) location() string {
	if l.pg || l.chk != nil {
		return l.shown
	}
	return l.dir
}

// Location names the ledger for a person: its directory, or a PostgreSQL
// ledger's URL without the password.
func (l *Ledger) Location() string { return l.location() }

// IsPostgres tells whether the ledger is kept in PostgreSQL.
func (l *Ledger) IsPostgres() bool { return l.pg }

// BlobsLocation names where the ledger keeps its blobs: a directory, or
// s3://BUCKET/PREFIX at its endpoint.
func (l *Ledger) BlobsLocation() string {
	if s, ok := l.blobs.(*s3Blobs); ok {
		return s.shown
	}
	if s, ok := l.blobs.(localBlobs); ok {
		return s.root
	}
	return l.dir
}

// ID returns the ledger's random identifier, fixed at init.
func (l *Ledger) ID() string { return l.id }

// Dir returns the ledger directory as an absolute path; for a PostgreSQL
// ledger, its local directory (blobs).
func (l *Ledger) Dir() string { return l.dir }
