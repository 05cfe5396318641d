// Package sqlenv is the policy-side SQL environment: a read-only SQL
// executor, the observation text a policy reads after each query, and the
// parser of the policy's replies. It holds no gold and imports nothing
// that does; the grader (stages/grade) uses the same executor after a
// trajectory is frozen.
//
// # Executor
//
// An Executor runs one statement at a time against a SQLite file and
// returns its rows as typed cells (Cell: null, int, real, text, blob, the
// storage class SQLite reports, with text kept byte for byte). It keeps a
// pool of connections per database path (Options.MaxConns) and is safe
// for concurrent use.
//
// Every connection is opened with the URI file:<abs path>?mode=ro (the
// file: prefix is what makes SQLite honour mode=ro) and, before any query,
// gets: PRAGMA query_only = 1; limits on statement length
// (SQLITE_LIMIT_SQL_LENGTH), on the size of any string or blob a query
// builds (SQLITE_LIMIT_LENGTH, so randomblob or printf cannot allocate
// gigabytes) and no attached databases (SQLITE_LIMIT_ATTACHED = 0); the
// authorizer Policy (SELECT, READ, RECURSIVE, functions but load_extension
// and fts3_tokenizer, six schema PRAGMAs; nothing else); and a progress
// handler that aborts the statement once its deadline passes. Each query
// must then be exactly one statement (the tail after it may hold only white
// space and comments) that sqlite3_stmt_readonly calls read-only, which
// also refuses VACUUM INTO, for which SQLite has no authorizer action.
//
// A query runs under Options.Timeout (10 s by default) and the caller's
// context; at the deadline the statement is interrupted and a
// *TimeoutError returned within milliseconds. Reading stops at
// Options.MaxRows rows or Options.MaxBytes bytes, and the Result says it
// was cut (Truncated).
//
// # Memory
//
// Options.MaxBytes counts the memory a result's rows take (24 bytes a
// row, 40 a value, and text and blob bytes), so it bounds what a result
// adds to the Go heap. Inside SQLite, Options.MaxValueLength bounds any
// one string or blob, and two process-wide heap limits, set by the first
// NewExecutor, bound the rest (sorts, distinct sets, strings being built):
// past HeapSoftLimit (64 MiB) SQLite reuses page-cache memory rather than
// allocating more; past HeapHardLimit (128 MiB) an allocation fails and
// the statement with ErrOutOfMemory, and the connection stays usable. The
// limits hold for every SQLite connection in the process. SQLite enforces
// them only with its memory accounting on, which this package's init turns
// on, as it must happen before SQLite initialises.
//
// The executor calls SQLite's C API through modernc.org/sqlite/lib rather
// than database/sql, because the database/sql driver turns text in DATE,
// DATETIME and TIMESTAMP columns into time.Time and the stored text cannot
// be recovered from it; see conn.go.
//
// # Observations
//
// RenderObservation writes the observation of one <sql> turn in the
// layout named ObservationFormat: STATUS: OK or ERROR, ROW_COUNT, the
// column names and at most 50 rows, or the error message. The text is
// deterministic and carries no host paths. ParseObservation reads it back
// into columns and rows for a reader (rlgate ui's trajectory page).
//
// # Turns
//
// ParseTurn reads a reply of the multi-turn protocol: <think>…</think>,
// then <sql>…</sql> (run it) or <solution>…</solution> (final). A reply
// that breaks the protocol yields a *FormatError whose Hint the
// environment can put in a format-correction prompt. Because engines stop
// at the stop strings </sql> and </solution> and may strip them, a reply
// may end where the closing tag would be.
//
// # Naive sums
//
// Every connection also defines rlgate_naive_sum, rlgate_naive_avg and
// rlgate_naive_total (NaiveAggregates): SUM, AVG and TOTAL as SQLite
// before 3.43 computed them, one double added to left to right, where
// later versions compensate. A grader runs a query with them to learn
// whether its verdict depends on the SQLite version (stages/grade).
package sqlenv
