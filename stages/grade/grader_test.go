package grade

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

const dogKennels = "../../testdata/spider/database/dog_kennels/dog_kennels.sqlite"

func newTestGrader(t *testing.T, o Options) *Grader {
	t.Helper()
	g := NewGrader(o, nil)
	t.Cleanup(func() { g.Close() })
	return g
}

func TestGrade(t *testing.T) {
	g := newTestGrader(t, Options{})
	const gold = "SELECT name FROM Dogs WHERE age > 8"
	tests := []struct {
		name   string
		metric Metric
		pred   string
		gold   string
		want   Verdict
	}{
		{"same query", MetricBird, gold, gold, VerdictCorrect},
		{"equivalent query", MetricStrict, "SELECT name FROM Dogs WHERE NOT age <= 8", gold, VerdictCorrect},
		{"DISTINCT only matters outside spider", MetricBird, "SELECT DISTINCT abandoned_yn FROM Dogs", "SELECT abandoned_yn FROM Dogs", VerdictCorrect},
		{"DISTINCT stripped under spider", MetricSpider, "SELECT DISTINCT abandoned_yn FROM Dogs", "SELECT abandoned_yn FROM Dogs", VerdictCorrect},
		{"DISTINCT counted under strict", MetricStrict, "SELECT DISTINCT abandoned_yn FROM Dogs", "SELECT abandoned_yn FROM Dogs", VerdictWrong},
		{"wrong rows", MetricBird, "SELECT name FROM Dogs WHERE age > 9", gold, VerdictWrong},
		{"pred error", MetricSpider, "SELECT nme FROM Dogs", gold, VerdictPredError},
		{"pred writes", MetricBird, "DELETE FROM Dogs", gold, VerdictPredError},
		{"no prediction", MetricBird, "", gold, VerdictPredError},
		{"gold defect", MetricBird, gold, "SELECT name FROM Cats", VerdictGoldDefect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := g.Grade(context.Background(), tt.metric, dogKennels, tt.pred, tt.gold)
			if err != nil {
				t.Fatal(err)
			}
			if o.Verdict != tt.want {
				t.Errorf("verdict %s (%s), want %s", o.Verdict, o.Detail, tt.want)
			}
		})
	}
}

func TestGradeBudgets(t *testing.T) {
	endless := "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r"
	g := newTestGrader(t, Options{BirdBudget: 200 * time.Millisecond, Options: sqlenv.Options{Timeout: 200 * time.Millisecond}})
	for _, m := range []Metric{MetricBird, MetricSpider} {
		t.Run(string(m), func(t *testing.T) {
			start := time.Now()
			o, err := g.Grade(context.Background(), m, dogKennels, endless, "SELECT 1")
			if err != nil {
				t.Fatal(err)
			}
			if o.Verdict != VerdictPredError || !errors.Is(o.Pred.Err, sqlenv.ErrTimeout) {
				t.Errorf("verdict %s (%v), want a timed-out prediction", o.Verdict, o.Pred.Err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	t.Run("gold timeout is a defect and not cached", func(t *testing.T) {
		o, err := g.Grade(context.Background(), MetricBird, dogKennels, "SELECT 1", endless)
		if err != nil {
			t.Fatal(err)
		}
		if o.Verdict != VerdictGoldDefect {
			t.Errorf("verdict %s, want gold defect", o.Verdict)
		}
		if _, ok := g.gold.Get(GoldKey{DB: mustDigest(t, g), SQL: endless}); ok {
			t.Error("timed-out gold was cached")
		}
	})
}

func mustDigest(t *testing.T, g *Grader) ledger.Digest {
	t.Helper()
	d, err := g.digest(dogKennels)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestGradeResultCap(t *testing.T) {
	g := newTestGrader(t, Options{Options: sqlenv.Options{MaxRows: 10}})
	o, err := g.Grade(context.Background(), MetricBird, dogKennels, "SELECT * FROM Dogs", "SELECT * FROM Dogs LIMIT 3")
	if err != nil {
		t.Fatal(err)
	}
	if o.Verdict != VerdictPredError || !errors.Is(o.Pred.Err, ErrResultTooLarge) {
		t.Errorf("verdict %s (%v), want ErrResultTooLarge", o.Verdict, o.Pred.Err)
	}
}

func TestGradeMissingDatabase(t *testing.T) {
	g := newTestGrader(t, Options{})
	if _, err := g.Grade(context.Background(), MetricBird, "testdata/none.sqlite", "SELECT 1", "SELECT 1"); err == nil {
		t.Error("no error for a missing database")
	}
}

func TestGoldCache(t *testing.T) {
	c := NewGoldCache()
	key := GoldKey{SQL: "SELECT 1"}
	var runs atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := c.Do(key, func() Denotation {
				runs.Add(1)
				time.Sleep(10 * time.Millisecond)
				return den("SELECT 1", row(i(1)))
			})
			if len(d.Rows) != 1 {
				t.Errorf("got %+v", d)
			}
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("gold ran %d times, want once", runs.Load())
	}
	if _, ok := c.Get(key); !ok || c.Len() != 1 {
		t.Errorf("cache holds %d entries", c.Len())
	}

	slow := GoldKey{SQL: "slow"}
	c.Do(slow, func() Denotation { return Denotation{Err: &sqlenv.TimeoutError{Err: context.DeadlineExceeded}} })
	if _, ok := c.Get(slow); ok {
		t.Error("a timeout was kept")
	}
	failing := GoldKey{SQL: "broken"}
	c.Do(failing, func() Denotation { return Denotation{Err: &sqlenv.SQLError{Code: 1, Msg: "no such table"}} })
	if d, ok := c.Get(failing); !ok || d.Err == nil {
		t.Error("a gold error was not kept")
	}
	c.Put(slow, den("slow", row(i(2))))
	if d, ok := c.Get(slow); !ok || d.Rows[0][0] != i(2) {
		t.Errorf("Put then Get: %+v, %v", d, ok)
	}
}

func TestGoldCacheSharedAcrossPredictions(t *testing.T) {
	cache := NewGoldCache()
	g := NewGrader(Options{}, cache)
	defer g.Close()
	for _, pred := range []string{"SELECT 1", "SELECT 2", "SELECT 1.0"} {
		if _, err := g.Grade(context.Background(), MetricBird, dogKennels, pred, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	// spider executes a rewritten gold, so it has its own entry only when
	// the rewrite changes the query.
	if _, err := g.Grade(context.Background(), MetricSpider, dogKennels, "SELECT 1", "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Grade(context.Background(), MetricSpider, dogKennels, "SELECT 1", "SELECT DISTINCT 1"); err != nil {
		t.Fatal(err)
	}
	if cache.Len() != 2 {
		t.Errorf("cache holds %d golds, want 2", cache.Len())
	}
}
