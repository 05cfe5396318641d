//go:build unix

package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkReport times rlgate report writing all three formats (md,
// html, json) over BenchmarkGate's ledger (four evaluations of 1,534
// tasks × 8 samples, an rl run of 10,000 steps × 80 keys) after one gate
// recorded its verdict: the model tables over all tasks and each of the
// 20 databases, the curves, budget and lineage. Issue target: under 1 s.
func BenchmarkReport(b *testing.B) {
	ldir, p := benchGateLedger(b)
	// The gate fails a check on this ledger (as in BenchmarkGate), so the
	// report is of a failed gate: every table still computed.
	if v, err := runGate(context.Background(), gateOptions{Dir: ldir, Policy: p}, io.Discard); v == nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "report")
	before, n := benchCPU(b), 0
	b.ResetTimer()
	for b.Loop() {
		if _, err := runReport(context.Background(), reportOptions{Dir: ldir, Out: out}, io.Discard); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric((benchCPU(b)-before)/float64(n), "cpu-s/op")
}
