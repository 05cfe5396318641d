package sqlenv

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// copyDB copies a real database into a fresh directory, so that a test
// that fails to contain a statement damages only the copy.
func copyDB(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// digestFile returns the BLAKE3 digest of the file at path.
func digestFile(t *testing.T, path string) ledger.Digest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, _, err := ledger.SumReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, or 0
// where /proc is not available.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestHostileStatements runs statements a policy might write to damage,
// escape or exhaust the environment against a copy of the largest Spider
// database (world_1: city has 4079 rows). Each must fail with the expected
// error class, or time out, within the deadline plus 200 ms; afterwards
// the file is byte-identical, no file has appeared beside it, and memory
// stayed bounded.
func TestHostileStatements(t *testing.T) {
	const deadline = 300 * time.Millisecond
	slack := 200 * time.Millisecond
	if raceEnabled {
		slack = 2 * time.Second
	}
	db := copyDB(t, "../../testdata/spider/database/world_1/world_1.sqlite")
	dir := filepath.Dir(db)
	before := digestFile(t, db)
	e := newTestExecutor(t, Options{Timeout: deadline, MaxRows: 1000, MaxBytes: 1 << 20, MaxValueLength: 1 << 20})

	cartesian := "SELECT count(*) FROM city a, city b, city c"
	tests := []struct {
		name  string
		query string
		want  []error // the error must match one of these
	}{
		// Writes.
		{"insert", "INSERT INTO city (Name) VALUES ('x')", []error{ErrNotAuthorized}},
		{"insert select", "INSERT INTO city SELECT * FROM city", []error{ErrNotAuthorized}},
		{"insert through a CTE", "WITH x AS (SELECT 1) INSERT INTO city (ID) SELECT * FROM x", []error{ErrNotAuthorized}},
		{"replace", "REPLACE INTO city (ID, Name) VALUES (1, 'x')", []error{ErrNotAuthorized}},
		{"update", "UPDATE city SET Population = 0", []error{ErrNotAuthorized}},
		{"update returning", "UPDATE city SET Name = 'x' WHERE ID = 1 RETURNING *", []error{ErrNotAuthorized}},
		{"delete", "DELETE FROM city", []error{ErrNotAuthorized}},
		{"delete returning", "DELETE FROM city RETURNING ID", []error{ErrNotAuthorized}},
		{"upsert", "INSERT INTO city (ID) VALUES (1) ON CONFLICT (ID) DO UPDATE SET Name = 'x'", []error{ErrNotAuthorized}},
		// Schema changes.
		{"create table", "CREATE TABLE t (x)", []error{ErrNotAuthorized}},
		{"create temp table", "CREATE TEMP TABLE t (x)", []error{ErrNotAuthorized}},
		{"create table as", "CREATE TABLE t AS SELECT * FROM city", []error{ErrNotAuthorized}},
		{"drop table", "DROP TABLE city", []error{ErrNotAuthorized}},
		{"drop table if exists", "DROP TABLE IF EXISTS country", []error{ErrNotAuthorized}},
		{"alter add column", "ALTER TABLE city ADD COLUMN x", []error{ErrNotAuthorized}},
		{"alter rename", "ALTER TABLE city RENAME TO town", []error{ErrNotAuthorized}},
		{"create index", "CREATE INDEX i ON city (Name)", []error{ErrNotAuthorized}},
		{"drop index", "DROP INDEX idx_city_CountryCode", []error{ErrNotAuthorized}},
		{"create view", "CREATE VIEW v AS SELECT 1", []error{ErrNotAuthorized}},
		{"create temp view", "CREATE TEMP VIEW v AS SELECT * FROM city", []error{ErrNotAuthorized}},
		{"create trigger", "CREATE TRIGGER tr AFTER INSERT ON city BEGIN DELETE FROM city; END", []error{ErrNotAuthorized}},
		{"create virtual table", "CREATE VIRTUAL TABLE v USING fts5 (x)", []error{ErrNotAuthorized}},
		// Other files.
		{"attach a file", "ATTACH DATABASE '" + filepath.Join(dir, "evil.db") + "' AS evil", []error{ErrNotAuthorized}},
		{"attach memory", "ATTACH 'file::memory:' AS m", []error{ErrNotAuthorized}},
		{"detach", "DETACH DATABASE main", []error{ErrNotAuthorized}},
		{"vacuum", "VACUUM", []error{ErrNotReadOnly, ErrNotAuthorized}},
		{"vacuum into", "VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'", []error{ErrNotReadOnly, ErrNotAuthorized}},
		// PRAGMAs.
		{"pragma query_only off", "PRAGMA query_only = 0", []error{ErrNotAuthorized}},
		{"pragma journal_mode", "PRAGMA journal_mode = DELETE", []error{ErrNotAuthorized}},
		{"pragma writable_schema", "PRAGMA writable_schema = 1", []error{ErrNotAuthorized}},
		{"pragma user_version", "PRAGMA user_version = 7", []error{ErrNotAuthorized}},
		{"pragma database_list reveals paths", "PRAGMA database_list", []error{ErrNotAuthorized}},
		{"pragma wal_checkpoint", "PRAGMA wal_checkpoint(TRUNCATE)", []error{ErrNotAuthorized}},
		{"pragma temp_store_directory", "PRAGMA temp_store_directory = '" + dir + "'", []error{ErrNotAuthorized}},
		// Native code.
		{"load_extension", "SELECT load_extension('/tmp/evil.so')", []error{ErrNotAuthorized}},
		{"load_extension in a subquery", "SELECT * FROM city WHERE ID = (SELECT load_extension('x'))", []error{ErrNotAuthorized}},
		{"fts3_tokenizer", "SELECT fts3_tokenizer('simple')", []error{ErrNotAuthorized, errSQL}},
		{"writefile", "SELECT writefile('" + filepath.Join(dir, "x") + "', 'y')", []error{errSQL}},
		// Transactions and maintenance.
		{"begin", "BEGIN IMMEDIATE", []error{ErrNotAuthorized}},
		{"savepoint", "SAVEPOINT s", []error{ErrNotAuthorized}},
		{"analyze", "ANALYZE", []error{ErrNotAuthorized}},
		{"reindex", "REINDEX", []error{ErrNotAuthorized}},
		// A harmless statement smuggling a second one.
		{"select then delete", "SELECT 1; DELETE FROM city", []error{ErrMultipleStatements}},
		{"select then attach", "SELECT 1; ATTACH 'x' AS y", []error{ErrMultipleStatements}},
		{"select then pragma", "SELECT * FROM sqlite_master; PRAGMA writable_schema = 1", []error{ErrMultipleStatements}},
		{"NUL hides a statement", "SELECT 1\x00; DROP TABLE city", []error{ErrNULByte}},
		// Time.
		{"endless recursive CTE", "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r", []error{ErrTimeout}},
		{"endless recursive CTE with UNION", "WITH RECURSIVE r(x) AS (SELECT 1 UNION SELECT x + 1 FROM r) SELECT max(x) FROM r", []error{ErrTimeout}},
		{"cartesian count", cartesian, []error{ErrTimeout}},
		{"cartesian sort", "SELECT a.Name FROM city a, city b ORDER BY random() LIMIT 1", []error{ErrTimeout}},
		{"cartesian group by", "SELECT a.Name, count(*) FROM city a, city b, countrylanguage c GROUP BY a.Name", []error{ErrTimeout}},
		// Memory.
		{"randomblob of 2 GB", "SELECT randomblob(2000000000)", []error{ErrTooBig}},
		{"zeroblob of 1 GiB", "SELECT zeroblob(1073741824)", []error{ErrTooBig}},
		{"printf of 1 GB", "SELECT printf('%.*c', 1000000000, 'x')", []error{ErrTooBig}},
		// One function call cannot be interrupted; MaxValueLength bounds
		// its work. Slow machines may reach the deadline first.
		{"replace grows a string", "SELECT replace(hex(zeroblob(400000)), '0', '00')", []error{ErrTooBig, ErrTimeout}},
		{"doubling string", "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT max(length(s)) FROM r", []error{ErrTooBig, ErrTimeout}},
		{"group_concat over a cartesian product", "SELECT group_concat(a.Name) FROM city a, city b", []error{ErrTooBig, ErrTimeout}},
		{"long statement", "SELECT '" + strings.Repeat("x", 200_000) + "'", []error{ErrTooBig}},
		{"deep nesting", "SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000), []error{errSQL}},
	}
	if len(tests) < 40 {
		t.Fatalf("only %d hostile statements", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, err := e.Execute(context.Background(), db, tt.query)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatalf("ran and returned %d rows", len(res.Rows))
			}
			t.Logf("%s: %v", elapsed.Round(time.Millisecond), err)
			if !matchesAny(err, tt.want) {
				t.Errorf("err = %v, want one of %v", err, tt.want)
			}
			if elapsed > deadline+slack {
				t.Errorf("took %s, deadline %s", elapsed, deadline)
			}
		})
	}

	// Floods of rows or bytes are cut, not errors.
	for _, q := range []string{
		"SELECT * FROM city a, city b",
		"SELECT randomblob(400000), randomblob(400000), randomblob(400000) FROM city",
		"SELECT zeroblob(1000000) FROM city",
	} {
		res, err := e.Execute(context.Background(), db, q)
		if err != nil || !res.Truncated || res.Bytes > 1<<20 || len(res.Rows) > 1000 {
			t.Errorf("%.40s: err %v; want a result cut at the caps", q, err)
		}
	}

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > 512<<20 {
		t.Errorf("Go heap in use %d MiB", ms.HeapInuse>>20)
	}
	rss := peakRSS()
	t.Logf("peak RSS %d MiB, Go heap in use %d MiB", rss>>20, ms.HeapInuse>>20)
	if rss > 1<<30 {
		t.Errorf("peak RSS %d MiB", rss>>20)
	}
	if after := digestFile(t, db); after != before {
		t.Errorf("database changed: %s, was %s", after, before)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, de := range entries {
			names = append(names, de.Name())
		}
		t.Errorf("files beside the database: %q", names)
	}
	// The executor still works.
	if res, err := e.Execute(context.Background(), db, "SELECT count(*) FROM city"); err != nil || res.Rows[0][0] != Int(4079) {
		t.Errorf("count after the corpus: %v, %v", res, err)
	}
}

// errSQL stands for any error SQLite itself reported.
var errSQL = errors.New("an SQLite error")

func matchesAny(err error, want []error) bool {
	for _, w := range want {
		var se *SQLError
		if errors.Is(err, w) || (w == errSQL && errors.As(err, &se)) {
			return true
		}
	}
	return false
}
