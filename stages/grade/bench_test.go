package grade

import (
	"path/filepath"
	"testing"
)

// BenchmarkGradeSpiderDAIL grades the 972 DAIL-SQL + GPT-4 predictions on
// Spider dev whose database is present (wta_1 skipped) with the spider
// metric, GOMAXPROCS workers, a fresh grader and gold cache each time, so
// every gold and every prediction is executed once per operation.
func BenchmarkGradeSpiderDAIL(b *testing.B) {
	gold := readGold(b, filepath.Join(spiderDir, "dev_gold.sql"))
	preds := readPredictionsFile(b, filepath.Join(spiderDir, "predictions/dail-sql-gpt4.txt"), FormatSpiderTxt, len(gold))
	root := filepath.Join(spiderDir, "database")
	graded := 0
	for b.Loop() {
		g := NewGrader(Options{}, nil)
		graded = 0
		for _, o := range gradeAll(b, g, MetricSpider, root, gold, preds) {
			if o != nil {
				graded++
			}
		}
		g.Close()
	}
	b.ReportMetric(float64(graded), "items/op")
}
