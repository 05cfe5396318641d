package audit

import (
	"context"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"math"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stats"
)

var ctx = context.Background()

// grade records one run's outcomes: correct for the task indexes in right.
func grade(t *testing.T, l *ledger.Ledger, run string, n int, right func(i int) bool) {
	t.Helper()
	var o ledger.Outcomes
	for i := range n {
		o.Items = append(o.Items, ledger.Outcome{TaskID: fmt.Sprintf("task-%04d", i), Correct: right(i)})
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: run, Body: o}); err != nil {
		t.Fatal(err)
	}
}

func TestCompare(t *testing.T) {
	l := ledgertest.New(t)
	grade(t, l, "eval-base", 200, func(i int) bool { return i < 100 })
	// rl: loses tasks 90-99 (c = 10), wins 100-121 (b = 22).
	grade(t, l, "eval-rl", 200, func(i int) bool { return i < 90 || (i >= 100 && i < 122) })
	grade(t, l, "eval-noupdate", 200, func(i int) bool { return i < 100 })
	c, err := Compare(ctx, l, CompareOptions{Runs: []LabeledRun{{"base", "eval-base"}, {"rl", "eval-rl"}, {"noupdate", "eval-noupdate"}}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Record(ctx, l); err != nil || c.Seq == 0 {
		t.Fatalf("record: %v", err)
	}
	rl, nu := c.Pairs[0], c.Pairs[1]
	if rl.B != 22 || rl.C != 10 || math.Abs(rl.Delta-0.06) > 1e-12 {
		t.Errorf("rl vs base: b=%d c=%d delta=%v", rl.B, rl.C, rl.Delta)
	}
	want, _ := stats.McNemar(22, 10)
	if rl.McNemar.ExactP != want.ExactP {
		t.Errorf("exact p %v, want %v", rl.McNemar.ExactP, want.ExactP)
	}
	holm, _ := stats.Holm([]float64{want.ExactP, 1}, 0.05)
	if rl.HolmP != holm.Adjusted[0] {
		t.Errorf("Holm p %v, want %v", rl.HolmP, holm.Adjusted[0])
	}
	if nu.B != 0 || nu.C != 0 || nu.Delta != 0 || nu.McNemar.ExactP != 1 {
		t.Errorf("noupdate vs base: %+v", nu)
	}
	if _, ok := nu.MDE.Get(); ok {
		t.Errorf("with no discordant pairs the MDE must be undefined, got %v", nu.MDE)
	}
	if lo, hi := rl.Bootstrap.Percentile.Lo, rl.Bootstrap.Percentile.Hi; !(lo < 0.06 && 0.06 < hi) || rl.Bootstrap.Seed != 7 {
		t.Errorf("bootstrap %+v", rl.Bootstrap)
	}
	if c.Models[1].Correct != 112 || c.Tasks != 200 {
		t.Errorf("models %+v", c.Models)
	}
}

func TestCompareRefusesDifferentTaskSets(t *testing.T) {
	l := ledgertest.New(t)
	grade(t, l, "a", 100, func(i int) bool { return true })
	grade(t, l, "b", 98, func(i int) bool { return true })
	_, err := Compare(ctx, l, CompareOptions{Runs: []LabeledRun{{"base", "a"}, {"rl", "b"}}})
	if err == nil || !strings.Contains(err.Error(), "only in base: 2 (task-0098, task-0099)") {
		t.Errorf("got %v", err)
	}
	if _, err := Compare(ctx, l, CompareOptions{Runs: []LabeledRun{{"base", "a"}, {"rl", "missing-run"}}}); err == nil || !strings.Contains(err.Error(), "no graded outcomes") {
		t.Errorf("missing run: %v", err)
	}
}

// BenchmarkCompareFourRuns compares four runs of 1,534 tasks (the size of
// BIRD dev), the end-to-end target being under 1 s.
func BenchmarkCompareFourRuns(b *testing.B) {
	l, err := ledger.Init(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	runs := []LabeledRun{{"base", "r0"}, {"sft", "r1"}, {"rl", "r2"}, {"noupdate", "r3"}}
	for k, r := range runs {
		var o ledger.Outcomes
		for i := range 1534 {
			o.Items = append(o.Items, ledger.Outcome{TaskID: fmt.Sprintf("bird-dev-%04d", i), Correct: (i*7+k*13)%10 < 4+k})
		}
		if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: r.Run, Body: o}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Compare(ctx, l, CompareOptions{Runs: runs}); err != nil {
			b.Fatal(err)
		}
	}
}
