package sqlenv

import (
	"fmt"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite 3.43 changed how SUM, AVG and TOTAL add floating-point values:
// before, one double added to left to right; since, a compensated
// (Kahan-Babuska-Neumaier) sum. The official evaluators ran on an older
// library than ours (3.40.1, testdata/REFERENCE-VERDICTS.md), so an
// average can read 74.07749999999999 there and 74.0775 here. Every
// connection therefore also has the old sums, under the names of
// NaiveAggregates, so that a grader can tell which verdicts depend on
// the summation (stages/grade).

// NaiveAggregates maps each summing aggregate to the function that
// computes it as SQLite 3.40 did (func.c: sumStep, sumFinalize,
// avgFinalize, totalFinalize).
var NaiveAggregates = map[string]string{
	"sum":   "rlgate_naive_sum",
	"avg":   "rlgate_naive_avg",
	"total": "rlgate_naive_total",
}

// naiveSum is SQLite 3.40's SumCtx, kept in the aggregate context SQLite
// allocates (zeroed) for each group.
type naiveSum struct {
	sum      float64
	isum     int64
	cnt      int64
	overflow int32
	approx   int32
}

// registerNaiveSums installs NaiveAggregates on the connection.
func (c *conn) registerNaiveSums() error {
	finals := map[string]func(*libc.TLS, uintptr){"sum": naiveSumFinal, "avg": naiveAvgFinal, "total": naiveTotalFinal}
	for name, naive := range NaiveAggregates {
		z, err := libc.CString(naive)
		if err != nil {
			return err
		}
		rc := sqlite3.Xsqlite3_create_function_v2(c.tls, c.db, z, 1, sqlite3.SQLITE_UTF8|sqlite3.SQLITE_DETERMINISTIC, 0,
			0, cFunc(naiveStep), cFunc(finals[name]), 0)
		libc.Xfree(c.tls, z)
		if rc != sqlite3.SQLITE_OK {
			return fmt.Errorf("register %s: %w", naive, c.lastError(rc))
		}
	}
	return nil
}

// naiveStep is 3.40's sumStep: every non-NULL value (text read as a
// number where it is one) is added to a double; the integer sum is kept
// while every value is an integer and it does not overflow.
func naiveStep(tls *libc.TLS, ctx uintptr, _ int32, argv uintptr) {
	p := sqlite3.Xsqlite3_aggregate_context(tls, ctx, int32(unsafe.Sizeof(naiveSum{})))
	v := *(*uintptr)(cPtr(argv))
	typ := sqlite3.Xsqlite3_value_numeric_type(tls, v)
	if p == 0 || typ == sqlite3.SQLITE_NULL {
		return
	}
	s := (*naiveSum)(cPtr(p))
	s.cnt++
	if typ != sqlite3.SQLITE_INTEGER {
		s.sum += sqlite3.Xsqlite3_value_double(tls, v)
		s.approx = 1
		return
	}
	x := sqlite3.Xsqlite3_value_int64(tls, v)
	s.sum += float64(x)
	if s.approx|s.overflow == 0 {
		if r := s.isum + x; (x > 0 && r < s.isum) || (x < 0 && r > s.isum) {
			s.approx, s.overflow = 1, 1
		} else {
			s.isum = r
		}
	}
}

// group returns the group's sum state, nil when it saw no row.
func group(tls *libc.TLS, ctx uintptr) *naiveSum {
	p := sqlite3.Xsqlite3_aggregate_context(tls, ctx, 0)
	if p == 0 {
		return nil
	}
	return (*naiveSum)(cPtr(p))
}

func naiveSumFinal(tls *libc.TLS, ctx uintptr) {
	switch s := group(tls, ctx); {
	case s == nil || s.cnt == 0:
		sqlite3.Xsqlite3_result_null(tls, ctx)
	case s.overflow != 0:
		z, _ := libc.CString("integer overflow")
		sqlite3.Xsqlite3_result_error(tls, ctx, z, -1)
		libc.Xfree(tls, z)
	case s.approx != 0:
		sqlite3.Xsqlite3_result_double(tls, ctx, s.sum)
	default:
		sqlite3.Xsqlite3_result_int64(tls, ctx, s.isum)
	}
}

func naiveAvgFinal(tls *libc.TLS, ctx uintptr) {
	if s := group(tls, ctx); s != nil && s.cnt > 0 {
		sqlite3.Xsqlite3_result_double(tls, ctx, s.sum/float64(s.cnt))
		return
	}
	sqlite3.Xsqlite3_result_null(tls, ctx)
}

func naiveTotalFinal(tls *libc.TLS, ctx uintptr) {
	sum := 0.0
	if s := group(tls, ctx); s != nil {
		sum = s.sum
	}
	sqlite3.Xsqlite3_result_double(tls, ctx, sum)
}
