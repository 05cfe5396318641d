package ledger_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// BenchmarkAppendBatch appends small entries 1000 to a transaction, each a
// metrics entry with one point, so the derived metrics table is filled too.
// The target is 50,000 entries/s.
func BenchmarkAppendBatch(b *testing.B) {
	l, err := ledger.Init(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const batch = 1000
	recs := make([]ledger.Record, batch)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range recs {
			recs[j] = ledger.Record{Kind: ledger.KindMetrics, Run: "bench", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: int64(i*batch + j), Key: "reward", Value: 0.5}}}}
		}
		if _, err := l.Append(ctx, recs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
	// CPU time per entry varies less than wall time on a shared machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/entry")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
