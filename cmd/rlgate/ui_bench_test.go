//go:build unix

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/ui"
)

// benchPage times one page of rlgate ui over BenchmarkGate's ledger (four
// evaluations of 1,534 tasks × 8 samples; RLGATE_BENCH_DIR keeps it), in
// process and without the network: server time, as the target
// (p95 under 200 ms, under 300 MiB of RSS) counts it. path builds the
// page's address from the ledger's evaluations.
func benchPage(b *testing.B, path func(evals []string, task string) string) {
	ldir, p := benchGateLedger(b)
	ctx := context.Background()
	l, err := ledger.OpenReadOnly(ctx, ldir)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s, err := ui.New(l, ui.Options{Loopback: true})
	if err != nil {
		b.Fatal(err)
	}
	var evals []string
	for _, r := range p.Subjects.Runs {
		evals = append(evals, r.Label+"="+r.Run)
	}
	recs, err := rollout.ReadRecorded(ctx, l, strings.TrimSuffix(p.Subjects.Runs[0].Run, ".spider-greedy"))
	if err != nil {
		b.Fatal(err)
	}
	target := path(evals, recs[len(recs)/2].TaskID)
	var took []time.Duration
	before := benchCPU(b)
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		start := time.Now()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil))
		took = append(took, time.Since(start))
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d\n%s", target, w.Code, w.Body)
		}
	}
	b.StopTimer()
	// CPU time per page beside the wall time: on a shared machine it is
	// the steadier figure.
	b.ReportMetric((benchCPU(b)-before)/float64(len(took))*1000, "cpu-ms/op")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB") // Linux reports KiB
}

// BenchmarkUIComparison: the comparison page of the four evaluations,
// with the first page of the matrix.
func BenchmarkUIComparison(b *testing.B) {
	benchPage(b, func(evals []string, _ string) string {
		return "/compare?" + url.Values{"runs": {strings.Join(evals, ",")}}.Encode()
	})
}

// BenchmarkUITrajectory: one task's episodes under two evaluations side by
// side, each with its grading panel.
func BenchmarkUITrajectory(b *testing.B) {
	benchPage(b, func(evals []string, task string) string {
		_, a, _ := strings.Cut(evals[0], "=")
		_, c, _ := strings.Cut(evals[2], "=")
		return "/trajectory?" + url.Values{"task": {task}, "a": {a}, "b": {c}}.Encode()
	})
}

// BenchmarkUIRuns: the first page of the runs of the gate benchmark's
// ledger.
func BenchmarkUIRuns(b *testing.B) {
	benchPage(b, func([]string, string) string { return "/runs" })
}
