package spidersql

import (
	"strings"
	"testing"
)

// BenchmarkExactMatch grades the 1034 DAIL-SQL predictions once per
// iteration, parsing prediction and gold each time.
func BenchmarkExactMatch(b *testing.B) {
	schemas, kmaps := tablesJSON(b, spider+"/tables.json")
	gold := lines(b, spider+"/dev_gold.sql")
	preds := lines(b, spider+"/predictions/dail-sql-gpt4.txt")
	for b.Loop() {
		for i, g := range gold {
			ExactMatch(schemas[g[1]], kmaps[g[1]], strings.Join(preds[i], "\t"), g[0])
		}
	}
}
