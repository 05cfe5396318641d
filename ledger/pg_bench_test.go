//go:build postgres

package ledger_test

import (
	"github.com/rlgate/rlgate/ledger/records"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// BenchmarkPGAppendBatch is BenchmarkAppendBatch on a local PostgreSQL
// (a throwaway cluster): small metrics entries, 1000 to a transaction.
// The target is 10,000 entries/s.
func BenchmarkPGAppendBatch(b *testing.B) {
	l, err := ledger.Init(ctx, ledgertest.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const batch = 1000
	recs := make([]ledger.Record, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range recs {
			recs[j] = ledger.Record{Kind: records.KindMetrics, Run: "bench", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: int64(i*batch + j), Key: "reward", Value: 0.5}}}}
		}
		if _, err := l.Append(ctx, recs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
}
