package grade

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// bird0037 is the gold of BIRD mini-dev item 37 (question 1339,
// student_club): an AVG over 8 non-integer costs, 74.0775.
const bird0037 = "SELECT AVG(T2.cost) FROM member AS T1 INNER JOIN expense AS T2 ON T1.member_id = T2.link_to_member WHERE T1.last_name = 'Allen' AND T1.first_name = 'Elijah' AND (SUBSTR(T2.expense_date, 6, 2) = '09' OR SUBSTR(T2.expense_date, 6, 2) = '10')"

// TestSummationOrderFragile: the known case. A prediction
// averaging the same costs in expense_date order matches the gold on a
// compensating SQLite (3.43+, ours), but SQLite 3.40, which the official
// verdicts were computed with, adds them left to right and gets
// 74.07750000000001 (checked with Python's sqlite3 on 3.40.1): the
// verdict is flagged fragile, with the reason. The same average in
// descending date order sums to 74.0775 either way and is not flagged,
// nor is the gold against itself.
func TestSummationOrderFragile(t *testing.T) {
	db := dataset.DBPath(birdDir+"/dev_databases", "student_club")
	g := NewGrader(Options{}, nil)
	defer g.Close()
	inDateOrder := func(dir string) string {
		return "SELECT AVG(cost) FROM (SELECT T2.cost AS cost FROM member AS T1 INNER JOIN expense AS T2 ON T1.member_id = T2.link_to_member WHERE T1.last_name = 'Allen' AND T1.first_name = 'Elijah' AND (SUBSTR(T2.expense_date, 6, 2) = '09' OR SUBSTR(T2.expense_date, 6, 2) = '10') ORDER BY T2.expense_date " + dir + ")"
	}
	for _, tt := range []struct {
		name    string
		pred    string
		fragile bool
	}{
		{"ascending dates: 3.40 gives 74.07750000000001", inDateOrder("ASC"), true},
		{"descending dates: 74.0775 either way", inDateOrder("DESC"), false},
		{"the gold itself", bird0037, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, m := range []Metric{MetricBird, MetricSpider} {
				o, err := g.Grade(context.Background(), m, db, tt.pred, bird0037)
				if err != nil {
					t.Fatal(err)
				}
				if !o.Correct || o.Fragile != tt.fragile {
					t.Errorf("%s: correct %v, fragile %v (%s); want correct, fragile %v", m, o.Correct, o.Fragile, o.FragileReason, tt.fragile)
				}
				if tt.fragile && !strings.Contains(o.FragileReason, "before 3.43") {
					t.Errorf("%s: reason %q does not name the summation", m, o.FragileReason)
				}
			}
		})
	}
}

// TestNaiveQuery: only calls of SUM, AVG and TOTAL are rewritten, not a
// column or string of that name.
func TestNaiveQuery(t *testing.T) {
	got, ok := naiveQuery("SELECT sum (x), Avg(y), total, 'sum(' FROM t -- avg(\nWHERE TOTAL(z) > 1")
	want := "SELECT rlgate_naive_sum (x), rlgate_naive_avg(y), total, 'sum(' FROM t -- avg(\nWHERE rlgate_naive_total(z) > 1"
	if !ok || got != want {
		t.Errorf("naiveQuery = %q, %v; want %q", got, ok, want)
	}
	if _, ok := naiveQuery("SELECT count(*) FROM t"); ok {
		t.Error("a query without SUM, AVG or TOTAL was rewritten")
	}
}

// TestNaiveSumsAreSQLite340: every shipped gold or prediction that calls
// SUM, AVG or TOTAL and returns floats (100 queries), run with the naive
// aggregates, gives SQLite 3.40.1's result bit for bit, as Python's
// sqlite3 computed it (testdata/sqlite-3.40/gen_sums.py); on some of them
// our library's own, compensated, sums differ, which is what the rule
// detects.
func TestNaiveSumsAreSQLite340(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/sqlite-3.40/sums.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []struct {
		DB   string        `json:"db"`
		SQL  string        `json:"sql"`
		Rows [][][2]string `json:"rows"`
	}
	if err := json.Unmarshal(raw, &qs); err != nil {
		t.Fatal(err)
	}
	g := NewGrader(Options{}, nil)
	defer g.Close()
	ctx := context.Background()
	compensatedDiffers := 0
	for _, q := range qs {
		want := make([][]string, len(q.Rows))
		for i, r := range q.Rows {
			for _, c := range r {
				v := c[1]
				if c[0] == "f" {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						t.Fatal(err)
					}
					v = strconv.FormatFloat(f, 'g', -1, 64)
				}
				want[i] = append(want[i], c[0]+v)
			}
		}
		nq, _ := naiveQuery(q.SQL)
		naive := g.Execute(ctx, MetricBird, "../../"+q.DB, nq, time.Minute)
		if d := cmp.Diff(want, typedCells(naive)); d != "" || naive.Err != nil {
			t.Errorf("%s: %v; naive sums differ from SQLite 3.40.1 (-3.40.1 +naive):\n%s", q.SQL, naive.Err, d)
		}
		if !cmp.Equal(want, typedCells(g.Execute(ctx, MetricBird, "../../"+q.DB, q.SQL, time.Minute))) {
			compensatedDiffers++
		}
	}
	t.Logf("%d queries; on %d our library's compensated sums differ from 3.40.1", len(qs), compensatedDiffers)
	if len(qs) != 100 || compensatedDiffers == 0 {
		t.Errorf("%d queries, %d with differing sums; want 100 and some", len(qs), compensatedDiffers)
	}
}

// typedCells writes each cell as its type letter and value (floats in
// shortest form), as sums.json holds them once its hex floats are read.
func typedCells(d Denotation) [][]string {
	out := make([][]string, len(d.Rows))
	for i, r := range d.Rows {
		out[i] = []string{}
		for _, c := range r {
			var s string
			switch c.Kind {
			case sqlenv.KindInt:
				s = "i" + strconv.FormatInt(c.Int, 10)
			case sqlenv.KindReal:
				s = "f" + strconv.FormatFloat(c.Real, 'g', -1, 64)
			case sqlenv.KindText:
				s = "t" + c.Str
			case sqlenv.KindBlob:
				s = "b" + hex.EncodeToString([]byte(c.Str))
			default:
				s = "n"
			}
			out[i] = append(out[i], s)
		}
	}
	return out
}
