package runner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
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
