package sqlenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const dogKennels = "../../testdata/spider/database/dog_kennels/dog_kennels.sqlite"

func newTestExecutor(t *testing.T, o Options) *Executor {
	t.Helper()
	e := NewExecutor(o)
	t.Cleanup(func() { e.Close() })
	return e
}

func TestExecuteTypedCells(t *testing.T) {
	e := newTestExecutor(t, Options{})
	tests := []struct {
		name  string
		query string
		want  []Cell
	}{
		{"literals", "SELECT 1, 1.0, 'a', x'00ff', NULL",
			[]Cell{Int(1), Real(1), Text("a"), Blob([]byte{0, 0xff}), Null()}},
		{"int64 bounds", "SELECT 9223372036854775807, -9223372036854775808",
			[]Cell{Int(9223372036854775807), Int(-9223372036854775808)}},
		{"integer division stays int", "SELECT 7 / 2, 7 / 2.0", []Cell{Int(3), Real(3.5)}},
		{"text not UTF-8 kept byte for byte", "SELECT CAST(x'ff61' AS TEXT)", []Cell{Text("\xffa")}},
		{"text with NUL kept whole", "SELECT CAST(x'610062' AS TEXT)", []Cell{Text("a\x00b")}},
		// The database/sql driver would return time.Time here and lose
		// the exact text; the executor must not.
		{"DATETIME column stays text", "SELECT date_of_birth, max(date_of_birth) FROM Dogs WHERE dog_id = 1",
			[]Cell{Text("2012-01-27 05:11:53"), Text("2012-01-27 05:11:53")}},
		{"VARCHAR column with a number stays text", "SELECT weight FROM Dogs WHERE dog_id = 1", []Cell{Text("7.57")}},
		{"INTEGER column", "SELECT dog_id FROM Dogs WHERE dog_id = 1", []Cell{Int(1)}},
		{"empty blob", "SELECT x''", []Cell{Blob(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Execute(context.Background(), dogKennels, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([][]Cell{tt.want}, res.Rows); diff != "" {
				t.Errorf("rows, want one row (-want +got):\n%s", diff)
			}
		})
	}
}

// SQLiteVersion answers without a database what a query on one answers.
func TestSQLiteVersionIsTheQueriedOne(t *testing.T) {
	e := newTestExecutor(t, Options{})
	res, err := e.Execute(context.Background(), dogKennels, "SELECT sqlite_version()")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]Cell{{Text(e.SQLiteVersion())}}, res.Rows); diff != "" {
		t.Errorf("sqlite_version() (-SQLiteVersion +query):\n%s", diff)
	}
}

func TestExecuteColumnsAndOrder(t *testing.T) {
	e := newTestExecutor(t, Options{})
	res, err := e.Execute(context.Background(), dogKennels,
		"SELECT name, age AS years FROM Dogs WHERE dog_id <= 3 ORDER BY dog_id DESC")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"name", "years"}, res.Columns); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	var names []string
	for _, r := range res.Rows {
		names = append(names, r[0].Str)
	}
	if diff := cmp.Diff([]string{"Mavis", "Hipolito", "Kacey"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestExecuteStatementShape(t *testing.T) {
	e := newTestExecutor(t, Options{})
	tests := []struct {
		name    string
		query   string
		wantErr error // nil: runs
	}{
		{"trailing semicolon", "SELECT 1;", nil},
		{"trailing comments", "SELECT 1; -- done\n/* really */ ", nil},
		{"leading semicolon", "; SELECT 1", nil},
		{"empty", "", ErrEmptyStatement},
		{"only white space", " \n\t", ErrEmptyStatement},
		{"only a comment", "-- nothing", ErrEmptyStatement},
		{"two statements", "SELECT 1; SELECT 2", ErrMultipleStatements},
		{"two semicolons", "SELECT 1;;", ErrMultipleStatements},
		{"statement after empty ones", ";; SELECT 1", nil},
		{"NUL byte", "SELECT 1\x00; DELETE FROM Dogs", ErrNULByte},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Execute(context.Background(), dogKennels, tt.query)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestExecuteCaps(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		query     string
		wantRows  int
		truncated bool
	}{
		{"under the row cap", Options{MaxRows: 20}, "SELECT * FROM Dogs", 15, false},
		{"at the row cap", Options{MaxRows: 15}, "SELECT * FROM Dogs", 15, false},
		{"over the row cap", Options{MaxRows: 5}, "SELECT * FROM Dogs", 5, true},
		// A row of one 19-byte text takes 24 (row) + 40 (cell) + 19 bytes.
		{"over the byte cap", Options{MaxBytes: 500}, "SELECT date_of_birth FROM Dogs", 6, true},
		// Numbers count their cells: 24 + 10 × 40 bytes a row.
		{"wide rows of numbers", Options{MaxBytes: 1000}, "SELECT 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 FROM Dogs", 2, true},
		{"one value over the byte cap", Options{MaxBytes: 1000}, "SELECT randomblob(2000)", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExecutor(t, tt.opts)
			res, err := e.Execute(context.Background(), dogKennels, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != tt.wantRows || res.Truncated != tt.truncated {
				t.Errorf("got %d rows, truncated %v; want %d, %v", len(res.Rows), res.Truncated, tt.wantRows, tt.truncated)
			}
			if res.Bytes > e.Options().MaxBytes {
				t.Errorf("result holds %d bytes, cap %d", res.Bytes, e.Options().MaxBytes)
			}
		})
	}
}

func TestExecuteErrors(t *testing.T) {
	e := newTestExecutor(t, Options{})
	tests := []struct {
		name    string
		db      string
		query   string
		wantErr error
		wantMsg string // SQLite's message, when a *SQLError
	}{
		{"missing database", "testdata/no-such.sqlite", "SELECT 1", ErrNoDatabase, ""},
		{"directory as database", "testdata", "SELECT 1", ErrNoDatabase, ""},
		{"missing column", dogKennels, "SELECT agee FROM Dogs", nil, "no such column: agee"},
		{"missing table", dogKennels, "SELECT * FROM Cats", nil, "no such table: Cats"},
		{"syntax", dogKennels, "SELEC 1", nil, `near "SELEC": syntax error`},
		{"write", dogKennels, "DELETE FROM Dogs", ErrNotAuthorized, "not authorized"},
		{"denied function", dogKennels, "SELECT load_extension('x')", ErrNotAuthorized, "not authorized to use function: load_extension"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Execute(context.Background(), tt.db, tt.query)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			var se *SQLError
			if tt.wantMsg != "" && (!errors.As(err, &se) || se.Msg != tt.wantMsg) {
				t.Errorf("err = %v, want SQLite message %q", err, tt.wantMsg)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	e := newTestExecutor(t, Options{})
	tests := []struct {
		name  string
		query string
		ok    bool
	}{
		{"valid", "SELECT name FROM Dogs", true},
		{"valid but endless", "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r", true},
		{"missing column", "SELECT agee FROM Dogs", false},
		{"write", "UPDATE Dogs SET age = 1", false},
		{"two statements", "SELECT 1; SELECT 2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.Prepare(context.Background(), dogKennels, tt.query)
			if (err == nil) != tt.ok {
				t.Errorf("Prepare = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestExecuteContext(t *testing.T) {
	endless := "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r"
	t.Run("deadline", func(t *testing.T) {
		e := newTestExecutor(t, Options{Timeout: 100 * time.Millisecond})
		start := time.Now()
		_, err := e.Execute(context.Background(), dogKennels, endless)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a timeout", err)
		}
		// An endless query that returns at all was interrupted; the bound
		// only tells the 100 ms deadline from a longer default (the
		// graders' are 30 s and more), and leaves a loaded machine room.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("interrupted after %s: the 100 ms deadline was not the one applied", d)
		}
		// The connection stays usable and no stale interrupt hits the next query.
		if _, err := e.Execute(context.Background(), dogKennels, "SELECT count(*) FROM Dogs"); err != nil {
			t.Errorf("next query: %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		e := newTestExecutor(t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := e.Execute(ctx, dogKennels, endless)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("already done", func(t *testing.T) {
		e := newTestExecutor(t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Execute(ctx, dogKennels, "SELECT 1"); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestExecuteConcurrent(t *testing.T) {
	e := newTestExecutor(t, Options{MaxConns: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				id := (g+i)%15 + 1
				res, err := e.Execute(context.Background(), dogKennels, fmt.Sprintf("SELECT dog_id FROM Dogs WHERE dog_id = %d", id))
				if err != nil {
					errs <- err
					return
				}
				if len(res.Rows) != 1 || res.Rows[0][0] != Int(int64(id)) {
					errs <- fmt.Errorf("dog %d: got %v", id, res.Rows)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestExecutorClosed(t *testing.T) {
	e := NewExecutor(Options{})
	if _, err := e.Execute(context.Background(), dogKennels, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := e.Execute(context.Background(), dogKennels, "SELECT 1"); !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
}
