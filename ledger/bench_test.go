package ledger_test

import (
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"path/filepath"
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
			recs[j] = ledger.Record{Kind: records.KindMetrics, Run: "bench", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: int64(i*batch + j), Key: "reward", Value: 0.5}}}}
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

// BenchmarkAppendMetrics appends what import-run writes for a W&B run of
// 100,000 steps x 50 keys: 100 metrics entries (body version 2) of 1,000
// steps x 50 keys in one transaction, derived tables included (the ledger's share of
// stages/runner's BenchmarkImportWandB).
func BenchmarkAppendMetrics(b *testing.B) {
	const entries, steps, keys = 100, 1000, 50
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("train/metric_%02d", k)
	}
	recs := make([]ledger.Record, entries)
	for e := range recs {
		pts := make([]ledger.MetricPoint, 0, steps*keys)
		for s := range steps {
			step := int64(e*steps + s)
			for k, name := range names {
				pts = append(pts, ledger.MetricPoint{Step: step, Key: name, Value: float64(step)*1.000123 + float64(k)/7})
			}
		}
		m := ledger.PackMetrics(pts) // as import-run writes them: body version 2
		m.Source, m.Format = "run-bench.wandb", "wandb"
		recs[e] = ledger.Record{Kind: records.KindMetrics, Run: "bench", Body: m}
	}
	var cpu time.Duration
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		l, err := ledger.Init(ctx, filepath.Join(dir, fmt.Sprint("ledger", i)))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := cpuTime()
		if _, err := l.Append(ctx, recs...); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
