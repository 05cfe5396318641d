package grade

import (
	"context"
	"fmt"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// BenchmarkGradeSpiderDAIL grades the 972 DAIL-SQL + GPT-4 predictions on
// Spider dev whose database is present through GradeFile, ledger writes
// included, with a fresh grader and gold cache each time, so every gold
// and every prediction is executed once per operation.
func BenchmarkGradeSpiderDAIL(b *testing.B) {
	dir := importSpider(b)
	l, err := ledger.Init(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	n := 0
	for b.Loop() {
		g := NewGrader(Options{}, nil)
		n++
		s, err := GradeFile(context.Background(), l, g, FileOptions{Run: fmt.Sprintf("bench-%d", n),
			Predictions: spiderDir + "/predictions/dail-sql-gpt4.txt", Format: FormatSpiderTxt, Dataset: dir, Metric: MetricSpider})
		if err != nil || s.Total != 972 {
			b.Fatal(err)
		}
		g.Close()
	}
}
