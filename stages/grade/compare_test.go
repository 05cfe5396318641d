package grade

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

var (
	i = sqlenv.Int
	f = sqlenv.Real
	s = sqlenv.Text
	n = sqlenv.Null
)

// den builds a denotation of sql with the given rows and as many columns
// as the first row has.
func den(sql string, rows ...[]sqlenv.Cell) Denotation {
	d := Denotation{SQL: sql, Rows: rows}
	if len(rows) > 0 {
		d.Columns = make([]string, len(rows[0]))
	}
	return d
}

func row(cells ...sqlenv.Cell) []sqlenv.Cell { return cells }

func TestCompare(t *testing.T) {
	const sel, ord = "SELECT x", "SELECT x ORDER BY x"
	failed := Denotation{SQL: sel, Err: &sqlenv.SQLError{Code: 1, Msg: "no such column: x"}}
	empty := Denotation{SQL: " ", Err: sqlenv.ErrEmptyStatement}
	tests := []struct {
		name                 string
		pred, gold           Denotation
		bird, spider, strict Verdict
	}{
		{"identical", den(sel, row(i(1), s("a"))), den(sel, row(i(1), s("a"))),
			VerdictCorrect, VerdictCorrect, VerdictCorrect},
		{"int equals float", den(sel, row(f(1))), den(sel, row(i(1))),
			VerdictCorrect, VerdictCorrect, VerdictCorrect},
		{"fraction is not int", den(sel, row(f(1.5))), den(sel, row(i(1))),
			VerdictWrong, VerdictWrong, VerdictWrong},
		{"NULL equals NULL", den(sel, row(n())), den(sel, row(n())),
			VerdictCorrect, VerdictCorrect, VerdictCorrect},
		{"text is not number", den(sel, row(s("1"))), den(sel, row(i(1))),
			VerdictWrong, VerdictWrong, VerdictWrong},
		{"no string normalisation", den(sel, row(s("Cat "))), den(sel, row(s("cat"))),
			VerdictWrong, VerdictWrong, VerdictWrong},
		{"text is not blob", den(sel, row(sqlenv.Blob([]byte("a")))), den(sel, row(s("a"))),
			VerdictWrong, VerdictWrong, VerdictWrong},
		{"columns swapped", den(sel, row(s("a"), i(1)), row(s("b"), i(2))), den(sel, row(i(1), s("a")), row(i(2), s("b"))),
			VerdictWrong, VerdictCorrect, VerdictWrong},
		{"duplicates", den(sel, row(i(1)), row(i(1)), row(i(2))), den(sel, row(i(1)), row(i(2))),
			VerdictCorrect, VerdictWrong, VerdictWrong},
		{"duplicates counted", den(sel, row(i(1)), row(i(2)), row(i(2))), den(sel, row(i(1)), row(i(1)), row(i(2))),
			VerdictCorrect, VerdictWrong, VerdictWrong},
		{"rows reordered, no ORDER BY", den(sel, row(i(2)), row(i(1))), den(sel, row(i(1)), row(i(2))),
			VerdictCorrect, VerdictCorrect, VerdictCorrect},
		{"rows reordered, ORDER BY", den(sel, row(i(2)), row(i(1))), den(ord, row(i(1)), row(i(2))),
			VerdictCorrect, VerdictWrong, VerdictWrong},
		{"spider needs the exact substring order by", den(sel, row(i(2)), row(i(1))), den("SELECT x ORDER  BY x", row(i(1)), row(i(2))),
			VerdictCorrect, VerdictCorrect, VerdictWrong},
		{"extra column", den(sel, row(i(1), i(2))), den(sel, row(i(1))),
			VerdictWrong, VerdictWrong, VerdictWrong},
		{"both empty", den(sel), den(sel),
			VerdictCorrect, VerdictCorrect, VerdictCorrect},
		{"empty against rows", den(sel), den(sel, row(i(1))),
			VerdictWrong, VerdictWrong, VerdictWrong},
		// quick_rej sorts each row by str(v)+str(type(v)): "1<class 'int'>"
		// sorts after "1.5<class 'str'>" but "1.0<class 'float'>" before
		// it, so the sorted rows differ and the official code rejects.
		{"spider quick_rej on int and float", den(sel, row(f(1), s("1.5"))), den(sel, row(i(1), s("1.5"))),
			VerdictCorrect, VerdictWrong, VerdictCorrect},
		{"bird cannot decode text", den(sel, row(s("a\xff"))), den(sel, row(s("a"))),
			VerdictPredError, VerdictCorrect, VerdictWrong},
		{"pred fails", failed, den(sel, row(i(1))),
			VerdictPredError, VerdictPredError, VerdictPredError},
		{"gold fails", den(sel, row(i(1))), failed,
			VerdictGoldDefect, VerdictGoldDefect, VerdictGoldDefect},
		{"empty statement denotes no rows in Python", empty, den(sel),
			VerdictCorrect, VerdictPredError, VerdictPredError},
		{"comment-only statement", Denotation{SQL: "-- none", Err: sqlenv.ErrEmptyStatement}, den(sel),
			VerdictCorrect, VerdictCorrect, VerdictPredError},
		{"timeout", Denotation{SQL: sel, Err: &sqlenv.TimeoutError{After: time.Second}}, den(sel),
			VerdictPredError, VerdictPredError, VerdictPredError},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			m    Metric
			want Verdict
		}{{MetricBird, tt.bird}, {MetricSpider, tt.spider}, {MetricStrict, tt.strict}} {
			t.Run(tt.name+"/"+string(c.m), func(t *testing.T) {
				o := Compare(c.m, tt.pred, tt.gold)
				if o.Verdict != c.want || o.Correct != (c.want == VerdictCorrect) {
					t.Errorf("verdict %s (correct %v, %s), want %s", o.Verdict, o.Correct, o.Detail, c.want)
				}
			})
		}
	}
}

func TestSpiderResultEqPermutations(t *testing.T) {
	// Eight columns with the same values in every column except one
	// marker: the original would enumerate up to 8^8 candidates.
	const cols, rows = 8, 40
	gold := make([][]sqlenv.Cell, rows)
	pred := make([][]sqlenv.Cell, rows)
	for r := range rows {
		gold[r] = make([]sqlenv.Cell, cols)
		pred[r] = make([]sqlenv.Cell, cols)
		for c := range cols {
			gold[r][c] = i(int64(r % 2))
			pred[r][c] = i(int64(r % 2))
		}
	}
	gold[0][2], pred[0][5] = s("x"), s("x")
	tests := []struct {
		name    string
		ordered bool
		mutate  func()
		want    bool
	}{
		{"bag", false, func() {}, true},
		{"list", true, func() {}, true},
		{"marker moved to another row", false, func() { pred[0][5], pred[1][5] = i(0), s("x") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.mutate()
			done := make(chan bool)
			go func() { done <- spiderResultEq(gold, pred, tt.ordered) }()
			select {
			case got := <-done:
				if got != tt.want {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("permutation search did not finish")
			}
		})
	}
}

func TestSpiderQuery(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"keyword", "SELECT DISTINCT name FROM t", "SELECT  name FROM t"},
		{"any case", "select Distinct name from t", "select  name from t"},
		{"in an aggregate", "SELECT count(DISTINCT name) FROM t", "SELECT count( name) FROM t"},
		{"as a function", "SELECT DISTINCT(name) FROM t", "SELECT (name) FROM t"},
		{"in a string", "SELECT 'distinct' FROM t", "SELECT 'distinct' FROM t"},
		{"in a string with escapes", `SELECT 'a\' distinct' FROM t`, `SELECT 'a\' distinct' FROM t`},
		{"quoted identifier", `SELECT "distinct" FROM t`, `SELECT "distinct" FROM t`},
		{"part of a word", "SELECT distinct_name, nodistinct FROM t", "SELECT distinct_name, nodistinct FROM t"},
		{"in a comment", "SELECT a -- distinct\nFROM t", "SELECT a -- distinct\nFROM t"},
		{"first statement only", "SELECT 1; SELECT DISTINCT 2", "SELECT 1; "},
		{"semicolon inside parentheses", "SELECT (1;2)", "SELECT (1;2)"},
		{"postprocess", "SELECT a FROM t WHERE b > = 1 AND c < = 2 AND d ! = 3", "SELECT a FROM t WHERE b >= 1 AND c <= 2 AND d != 3"},
		{"current year", "SELECT YEAR ( CURDATE ( ) ) - age FROM t", "SELECT 2020- age FROM t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spiderQuery(tt.in); got != tt.want {
				t.Errorf("spiderQuery(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLexSQLRoundTrips(t *testing.T) {
	for _, q := range []string{
		"SELECT T1.name, count(*) FROM a AS T1 JOIN [b c] ON x = `y` WHERE z LIKE '%it''s%' -- c\n/* d */ GROUP BY 1;",
		"unterminated 'string and /* comment",
		"@a #b $c :d ?e \\f ::g :=h é١ 12.5e3 1distinct",
	} {
		if got := joinTokens(lexSQL(q)); got != q {
			t.Errorf("tokens of %q join to %q", q, got)
		}
	}
}

func FuzzLexSQL(f *testing.F) {
	f.Add("SELECT DISTINCT a FROM t; SELECT 'x'")
	f.Add("[a] `b` \"c\" 'd' -- e\n# f\n/* g */")
	f.Fuzz(func(t *testing.T, q string) {
		if got := joinTokens(lexSQL(q)); got != q {
			t.Fatalf("tokens of %q join to %q", q, got)
		}
		spiderQuery(q) // must not panic
	})
}

func TestParseMetric(t *testing.T) {
	for _, in := range []string{"bird", "spider", "strict", "BIRD", ""} {
		m, err := ParseMetric(in)
		if ok := in == "bird" || in == "spider" || in == "strict"; ok != (err == nil) || (ok && string(m) != in) {
			t.Errorf("ParseMetric(%q) = %q, %v", in, m, err)
		}
	}
}

func ExampleCompare() {
	pred := Denotation{SQL: "SELECT age, name FROM t", Columns: []string{"age", "name"},
		Rows: [][]sqlenv.Cell{{sqlenv.Real(3), sqlenv.Text("Rex")}}}
	gold := Denotation{SQL: "SELECT name, age FROM t", Columns: []string{"name", "age"},
		Rows: [][]sqlenv.Cell{{sqlenv.Text("Rex"), sqlenv.Int(3)}}}
	for _, m := range []Metric{MetricBird, MetricSpider, MetricStrict} {
		fmt.Println(m, Compare(m, pred, gold).Verdict)
	}
	// Output:
	// bird wrong
	// spider correct
	// strict wrong
}

func TestHasOrderBy(t *testing.T) {
	tests := []struct {
		q    string
		want bool
	}{
		{"SELECT a FROM t ORDER BY a", true},
		{"select a from t order\n  by a desc limit 1", true},
		{"SELECT a FROM t WHERE b = (SELECT b FROM u ORDER BY b LIMIT 1)", false},
		{"WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", false},
		{"SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", true},
		{"SELECT 'order by' FROM t", false},
		{"SELECT a FROM t -- order by a", false},
		{"SELECT a FROM t", false},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			if got := hasOrderBy(tt.q); got != tt.want {
				t.Errorf("hasOrderBy(%q) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}
