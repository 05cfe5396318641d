package runner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/metrics/trackertest"
)

// writeVerlJSONL writes steps records of keys metrics each, as veRL's file
// logger does: {"step": N, "data": {...}}.
func writeVerlJSONL(tb testing.TB, path string, steps, keys int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for s := 1; s <= steps; s++ {
		fmt.Fprintf(w, `{"step": %d, "data": {`, s)
		for k := range keys {
			if k > 0 {
				w.WriteString(", ")
			}
			fmt.Fprintf(w, `"actor/metric_%02d/mean": %.17g`, k, float64(s)*1.000123+float64(k)/7)
		}
		w.WriteString("}}\n")
	}
	w.Flush()
	f.Close()
}

// BenchmarkIngestVerlJSONL ingests a veRL JSONL file of 10,000 steps x 80
// keys (~30 MB) into a ledger, derived tables included, then reads one
// key's series back. Issue targets: ingest under 1 s, series under 50 ms.
func BenchmarkIngestVerlJSONL(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	writeVerlJSONL(b, path, 10000, 80)
	fi, _ := os.Stat(path)
	var ingest, series time.Duration
	for i := 0; i < b.N; i++ {
		l, err := ledger.Init(ctx, filepath.Join(dir, fmt.Sprint("ledger", i)))
		if err != nil {
			b.Fatal(err)
		}
		run := "rl"
		if _, err := l.StartRun(ctx, run, ledger.RunStart{Stage: "rl"}); err != nil {
			b.Fatal(err)
		}
		g := &ingester{file: MetricFile{Path: path, Format: metrics.FormatVerl}}
		t0 := time.Now()
		if err := g.poll(ctx, l, run, true); err != nil {
			b.Fatal(err)
		}
		ingest += time.Since(t0)
		t1 := time.Now()
		pts, _, err := l.Series(ctx, run, "actor/metric_42/mean")
		series += time.Since(t1)
		if err != nil || len(pts) != 10000 || g.points != 800000 {
			b.Fatalf("%d points in series, %d ingested, %v", len(pts), g.points, err)
		}
		l.Close()
	}
	b.SetBytes(fi.Size())
	b.ReportMetric(ingest.Seconds()/float64(b.N), "ingest-s/op")
	b.ReportMetric(float64(series.Microseconds())/1000/float64(b.N), "series-ms/op")
}

// BenchmarkImportWandB imports a W&B run of 100,000 steps x 50 keys (about
// 170 MB of run-*.wandb, written by trackertest) into a ledger with
// runner.Import, derived tables included. Issue target: under 2 s.
func BenchmarkImportWandB(b *testing.B) {
	const steps, keys = 100000, 50
	dir := b.TempDir()
	path := filepath.Join(dir, "run-bench.wandb")
	data := trackertest.WandBRun(steps, keys)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	data = nil
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l, err := ledger.Init(ctx, filepath.Join(dir, fmt.Sprint("ledger", i)))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := benchCPU()
		res, err := Import(ctx, l, ImportSpec{Stage: "rl", Run: "rl", Source: MetricFile{Path: path, Format: metrics.FormatWandB}})
		cpu += benchCPU() - cpu0
		b.StopTimer()
		if err != nil || res.Status != "ok" || res.MetricPoints != steps*keys {
			b.Fatalf("%v: %+v", err, res)
		}
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// benchCPU is the process's user and system CPU time so far: on a shared
// machine it says what an operation costs when wall time does not.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
