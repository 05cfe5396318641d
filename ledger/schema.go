package ledger

import "strconv"

// SchemaVersion is the ledger format this build writes and reads; it is
// stored in PRAGMA user_version. Versions are never renumbered: a change to
// the entry format or hashing gets a new number and a section in
// docs/FORMAT.md.
const SchemaVersion = 1

// applicationID marks a SQLite file as an rlgate ledger ("rlgt").
const applicationID = 0x726c6774

// derivedVersion numbers the shape of the derived query tables. They hold
// nothing that is not in the entries, so when it rises an existing ledger
// rebuilds them from its entries on open instead of migrating them.
//
// 2: metrics is a rowid table. As a WITHOUT ROWID table its rows, tens of
// KB of packed points each, were the keys of its b-tree, and every key
// comparison of an insert read a whole row from its overflow pages: most
// of the time an import of millions of points spent in SQLite.
//
// 3: a metrics row holds its steps as varint differences (step_deltas, the
// bytes a body of version 2 holds in base64), not as 8-byte integers: a
// byte a step when steps go up by one, which took a quarter off what an
// import of millions of points writes (docs/BENCHMARKS.md).
//
// PostgreSQL ledgers keep version 1 (pgDerivedVersion): their tables did
// not change.
const derivedVersion = 3

// pgDerivedVersion numbers the shape of pgDDL's derived tables.
const pgDerivedVersion = 1

// derivedVersion is the derived-table version meta records in l's backend.
func (l *Ledger) derivedVersion() string {
	if l.pg {
		return strconv.Itoa(pgDerivedVersion)
	}
	return strconv.Itoa(derivedVersion)
}

// coreDDL creates the tables that are the source of truth. It never changes
// within a schema version.
const coreDDL = `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE entries (
	seq   INTEGER PRIMARY KEY,
	prev  TEXT NOT NULL,
	hash  TEXT NOT NULL,
	kind  TEXT NOT NULL,
	run   TEXT NOT NULL,
	at    TEXT NOT NULL,
	blobs TEXT NOT NULL,
	body  TEXT NOT NULL
);
CREATE INDEX entries_kind ON entries(kind, seq);
CREATE INDEX entries_run ON entries(run, seq);
`

// derivedTables lists the derived tables with the ORDER BY that verify uses
// to compare them row by row.
var derivedTables = []struct{ name, order string }{
	{"blob_refs", "digest, seq"},
	{"runs", "run"},
	{"artifacts", "seq, role, name"},
	{"metrics", "run, key, seq"},
	{"outcomes", "run, task_id, sample"},
}

// derivedDDL creates the derived query tables; see derive.go for how each
// entry kind fills them. A metrics row packs one key's points of one entry
// (n steps as varint differences, n little-endian float64 values, NaN
// for null; see stepColumn): a
// trainer logs tens of thousands of points per batch, and a row per point
// made ingest and series reads an order of magnitude slower. Rows that
// large belong in a rowid table, its primary key a separate index of small
// keys (see derivedVersion).
const derivedDDL = `
CREATE TABLE blob_refs (
	digest TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	PRIMARY KEY (digest, seq)
) WITHOUT ROWID;
CREATE TABLE runs (
	run         TEXT PRIMARY KEY,
	stage       TEXT NOT NULL,
	status      TEXT NOT NULL,
	started_seq INTEGER NOT NULL,
	started_at  TEXT NOT NULL,
	ended_seq   INTEGER,
	ended_at    TEXT,
	exit_code   INTEGER
) WITHOUT ROWID;
CREATE TABLE artifacts (
	seq      INTEGER NOT NULL,
	run      TEXT NOT NULL,
	role     TEXT NOT NULL,
	name     TEXT NOT NULL,
	kind     TEXT NOT NULL,
	digest   TEXT NOT NULL,
	manifest TEXT NOT NULL,
	PRIMARY KEY (seq, role, name)
) WITHOUT ROWID;
CREATE INDEX artifacts_digest ON artifacts(digest);
CREATE TABLE metrics (
	run   TEXT NOT NULL,
	key   TEXT NOT NULL,
	seq   INTEGER NOT NULL,
	n           INTEGER NOT NULL,
	step_deltas BLOB NOT NULL,
	vals        BLOB NOT NULL,
	PRIMARY KEY (run, key, seq)
);
CREATE TABLE outcomes (
	run     TEXT NOT NULL,
	task_id TEXT NOT NULL,
	sample  INTEGER NOT NULL,
	correct INTEGER NOT NULL,
	reward  REAL,
	seq     INTEGER NOT NULL,
	PRIMARY KEY (run, task_id, sample)
) WITHOUT ROWID;
`

// dropDerivedDDL removes the derived tables before a rebuild.
const dropDerivedDDL = `
DROP TABLE IF EXISTS blob_refs;
DROP TABLE IF EXISTS runs;
DROP TABLE IF EXISTS artifacts;
DROP TABLE IF EXISTS metrics;
DROP TABLE IF EXISTS outcomes;
`
