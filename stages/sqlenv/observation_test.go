package sqlenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRenderObservation(t *testing.T) {
	many := &Result{Columns: []string{"n"}}
	for i := range 53 {
		many.Rows = append(many.Rows, []Cell{Int(int64(i))})
	}
	var manyWant strings.Builder
	manyWant.WriteString("STATUS: OK\nROW_COUNT: 53\nCOLUMNS: n")
	for i := range 50 {
		fmt.Fprintf(&manyWant, "\n%d", i)
	}
	manyWant.WriteString("\n... 3 more rows not shown")

	tests := []struct {
		name string
		res  *Result
		err  error
		opts ObservationOptions
		want string
	}{
		{
			name: "rows of every kind",
			res: &Result{Columns: []string{"name", "age", "w", "b", "x"}, Rows: [][]Cell{
				{Text("Kacey"), Int(6), Real(7.5), Blob([]byte{1}), Null()},
				{Text("a|b\\c\nd\te"), Int(-1), Real(1e16), Blob(nil), Text("")},
			}},
			want: "STATUS: OK\nROW_COUNT: 2\nCOLUMNS: name | age | w | b | x\n" +
				"Kacey | 6 | 7.5 | X'01' | NULL\n" +
				`a\|b\\c\nd\te | -1 | 1e+16 | X'' | `,
		},
		{
			name: "no rows",
			res:  &Result{Columns: []string{"count(*)"}},
			want: "STATUS: OK\nROW_COUNT: 0\nCOLUMNS: count(*)",
		},
		{
			name: "rows beyond the display limit",
			res:  many,
			want: manyWant.String(),
		},
		{
			name: "one row beyond a custom limit",
			res:  &Result{Columns: []string{"n"}, Rows: [][]Cell{{Int(1)}, {Int(2)}}},
			opts: ObservationOptions{MaxRows: 1},
			want: "STATUS: OK\nROW_COUNT: 2\nCOLUMNS: n\n1\n... 1 more row not shown",
		},
		{
			name: "result cut by the executor",
			res:  &Result{Columns: []string{"n"}, Rows: [][]Cell{{Int(1)}}, Truncated: true},
			want: "STATUS: OK\nROW_COUNT: 1+\nCOLUMNS: n\n1",
		},
		{
			name: "long value cut",
			res:  &Result{Columns: []string{"s"}, Rows: [][]Cell{{Text("héllo world")}}},
			opts: ObservationOptions{MaxCellRunes: 5},
			want: "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: s\nhéllo...",
		},
		{
			name: "text that is not UTF-8",
			res:  &Result{Columns: []string{"s"}, Rows: [][]Cell{{Text("a\xffb\uFFFD")}}},
			want: "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: s\na\\xffb\uFFFD",
		},
		{
			name: "SQLite error",
			err:  &SQLError{Code: 1, Msg: "no such column: agee"},
			want: "STATUS: ERROR\nERROR: no such column: agee",
		},
		{
			name: "timeout",
			err:  &TimeoutError{After: 10 * time.Second, Err: context.DeadlineExceeded},
			want: "STATUS: ERROR\nERROR: query timed out after 10s",
		},
		{
			name: "two statements",
			err:  ErrMultipleStatements,
			want: "STATUS: ERROR\nERROR: only one statement per query is allowed",
		},
		{
			name: "no host path leaks",
			err:  fmt.Errorf("open database /secret/gold/db.sqlite: %w", ErrNoDatabase),
			want: "STATUS: ERROR\nERROR: the query could not be executed",
		},
		{
			name: "unknown error",
			err:  errors.New("boom"),
			want: "STATUS: ERROR\nERROR: the query could not be executed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RenderObservation(tt.res, tt.err, tt.opts); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestRenderObservationOfExecution(t *testing.T) {
	e := newTestExecutor(t, Options{})
	res, err := e.Execute(context.Background(), dogKennels,
		"SELECT name, date_of_birth, weight + 0 FROM Dogs WHERE dog_id <= 2 ORDER BY dog_id")
	want := "STATUS: OK\nROW_COUNT: 2\nCOLUMNS: name | date_of_birth | weight + 0\n" +
		"Kacey | 2012-01-27 05:11:53 | 7.57\n" +
		"Hipolito | 2013-02-13 05:15:21 | 1.72"
	if got := RenderObservation(res, err, ObservationOptions{}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseObservationReadsWhatRenderWrites(t *testing.T) {
	many := &Result{Columns: []string{"n"}}
	for i := range 53 {
		many.Rows = append(many.Rows, []Cell{Int(int64(i))})
	}
	// A value that reads like the note of rows left out, and one with
	// markup: both are values.
	note := &Result{Columns: []string{"s"}, Rows: [][]Cell{{Text("... 1 more row not shown")}}}
	markup := &Result{Columns: []string{"<b>c</b>", ""}, Rows: [][]Cell{{Text("<script>alert(1)</script>"), Text(" | ")}, {Text(""), Null()}}}
	tests := []struct {
		name string
		res  *Result
		err  error
		opts ObservationOptions
		want *ObservationTable
	}{
		{"every kind", &Result{Columns: []string{"name", "age", "w", "b", "x"}, Rows: [][]Cell{
			{Text("Kacey"), Int(6), Real(7.5), Blob([]byte{1}), Null()},
			{Text("a|b\\c\nd\te\r"), Int(-1), Real(1e16), Blob(nil), Text("")},
		}}, nil, ObservationOptions{}, &ObservationTable{OK: true, RowCount: "2", Columns: []string{"name", "age", "w", "b", "x"},
			Rows: [][]string{{"Kacey", "6", "7.5", "X'01'", "NULL"}, {"a|b\\c\nd\te\r", "-1", "1e+16", "X''", ""}}}},
		{"no rows", &Result{Columns: []string{"count(*)"}}, nil, ObservationOptions{}, &ObservationTable{OK: true, RowCount: "0", Columns: []string{"count(*)"}}},
		{"rows left out", many, nil, ObservationOptions{MaxRows: 2}, &ObservationTable{OK: true, RowCount: "53", Columns: []string{"n"}, Rows: [][]string{{"0"}, {"1"}}, NotShown: 51}},
		{"one row left out", &Result{Columns: []string{"n"}, Rows: [][]Cell{{Int(1)}, {Int(2)}}}, nil, ObservationOptions{MaxRows: 1},
			&ObservationTable{OK: true, RowCount: "2", Columns: []string{"n"}, Rows: [][]string{{"1"}}, NotShown: 1}},
		{"cut by the executor", &Result{Columns: []string{"n"}, Rows: [][]Cell{{Int(1)}}, Truncated: true}, nil, ObservationOptions{},
			&ObservationTable{OK: true, RowCount: "1+", Columns: []string{"n"}, Rows: [][]string{{"1"}}}},
		{"value cut", &Result{Columns: []string{"s"}, Rows: [][]Cell{{Text("héllo world")}}}, nil, ObservationOptions{MaxCellRunes: 5},
			&ObservationTable{OK: true, RowCount: "1", Columns: []string{"s"}, Rows: [][]string{{"héllo..."}}}},
		{"not UTF-8", &Result{Columns: []string{"s"}, Rows: [][]Cell{{Text("a\xffb\uFFFD")}}}, nil, ObservationOptions{},
			&ObservationTable{OK: true, RowCount: "1", Columns: []string{"s"}, Rows: [][]string{{"a\xffb\uFFFD"}}}},
		{"a value like the note", note, nil, ObservationOptions{}, &ObservationTable{OK: true, RowCount: "1", Columns: []string{"s"}, Rows: [][]string{{"... 1 more row not shown"}}}},
		{"markup", markup, nil, ObservationOptions{}, &ObservationTable{OK: true, RowCount: "2", Columns: []string{"<b>c</b>", ""},
			Rows: [][]string{{"<script>alert(1)</script>", " | "}, {"", "NULL"}}}},
		{"error", nil, &SQLError{Code: 1, Msg: "near \"|\": syntax error\nat line 2"}, ObservationOptions{}, &ObservationTable{Error: "near \"|\": syntax error\nat line 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := RenderObservation(tt.res, tt.err, tt.opts)
			got, ok := ParseObservation(text, tt.opts)
			if !ok {
				t.Fatalf("not read: %q", text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", text, diff)
			}
		})
	}
	for _, text := range []string{"", "rows: 3", "STATUS: OK\nROW_COUNT: x\nCOLUMNS: a", "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: a | b\nonly one",
		"STATUS: OK\nROW_COUNT: 1\nCOLUMNS: a\nbad \\q escape", "STATUS: OK\nROW_COUNT: 3\nCOLUMNS: a\n1\n... 9 more rows not shown", "STATUS: ERROR\nERROR: a\nb", "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: a\nx|y"} {
		if got, ok := ParseObservation(text, ObservationOptions{}); ok {
			t.Errorf("%q read as %+v", text, got)
		}
	}
}
