// Package ledger is rlgate's store of record: an append-only, hash-chained
// log of entries in SQLite, and a content-addressed blob store beside it.
//
// A ledger is a directory:
//
//	ledger.db              SQLite (WAL), PRAGMA user_version = SchemaVersion
//	blobs/ab/<64 hex>      immutable blobs named by the BLAKE3-256 of their bytes
//	blobs/tmp/             blobs being written
//
// Entries are the source of truth. Each has a seq (1, 2, 3, ...), the hash
// of the entry before it (prev), a kind, an optional run id, a UTC time, the
// blobs it names, and a canonical JSON body (RFC 8785, see CanonicalJSON);
// its hash covers all of these (docs/FORMAT.md, "Entry hash"). The first
// entry is always a ledger.init entry naming the ledger's random id. A
// body too large for the generic encoding (encoding/json, then
// Canonicalize) writes itself: metrics batches inside this package, and
// through CanonicalWriter, which checks what makes its output canonical,
// any CanonicalEncoder (a grading's outcomes).
//
// The query tables (runs, artifacts, metrics, outcomes, blob_refs) are derived from
// entries by one deriver, in the same transaction as the entries, so they
// never disagree with them; Verify replays every entry through that deriver
// into a scratch database and compares. They can be rebuilt at any time,
// and Open rebuilds them for a new derived version only after the same
// comparison finds nothing to erase.
//
// Init builds a whole ledger in a temporary directory and renames it into
// place, so a crash leaves none or a whole one.
//
// Names (run ids, stages, artifact names) are checked by CheckName on
// append only, so ledgers written before it still verify; Printable is how
// every reader shows them.
//
// Writes: a blob is fsynced and renamed into place before any entry names
// it (Append refuses an entry naming a missing blob, or one whose file is
// not a regular file); storing bytes again replaces the file. Append runs in an
// immediate transaction, so several processes may append at once and the
// chain stays linear; SQLite's busy timeout makes them wait their turn.
// Nothing is ever updated or deleted.
//
// Reads: OpenBlob and ReadBlob re-hash what they return and fail with
// ErrBlobCorrupt on a mismatch, and refuse a blob file that is not a
// regular file (ErrBlobNotRegular). Verify checks the SQLite file and its
// schema, walks everything and returns every finding rather than the
// first; it never writes, and stops when its context is cancelled. Head names the last entry; printed in a
// report, it lets a reader detect later that the chain was cut short.
//
// OpenReadOnly opens a ledger without writing it, for commands that only
// read and for users who may not write it.
//
// A ledger may instead live in PostgreSQL (Init, Open and OpenReadOnly take
// a postgres:// URL whose blobs parameter names a local directory for
// blobs; run locks are advisory locks every host sees): the same tables with PostgreSQL's types, written
// and read by the same SQL through pgConn, every write transaction taking
// one advisory lock before it reads the head (pg.go; docs/FORMAT.md,
// "PostgreSQL ledgers"). Its blobs parameter may instead be an S3 location,
// s3://BUCKET/PREFIX: blobs are then objects in that bucket, uploaded
// before the entry naming them and re-hashed on every read (s3.go; the
// blobStore interface in blobstore.go chooses between the two stores).
//
// Copy copies a ledger into another directory or database, or into an earlier copy,
// entries byte for byte through the append path with their blobs first,
// and refuses a copy whose chain diverged, naming the first differing seq.
//
// Tests get a ledger that verifies itself at cleanup from package
// ledgertest.
//
// ForEach is the worker pool (GOMAXPROCS goroutines of an errgroup taking
// indices in turn) that Append uses to prepare records and that the
// packages above use for their parallel work: the first error, or Ctrl-C,
// stops every worker.
package ledger
