package rollout_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// benchRollout plays episodes of the three-turn policy (two <sql> probes,
// then a solution) on the Spider databases and returns episodes per
// second, recording included.
func benchRollout(b *testing.B, url string, tasks, samples, concurrency int) float64 {
	b.Helper()
	l, err := ledger.Init(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	o := options(b, "bench", url, tasks)
	o.Protocol.Sampling.N = samples
	o.Concurrency = concurrency
	t0 := time.Now()
	s, err := rollout.Play(ctx, l, o)
	if err != nil {
		b.Fatal(err)
	}
	if s.StopReasons[rollout.StopSolution] != tasks*samples {
		b.Fatalf("summary %+v", s)
	}
	return float64(s.Episodes) / time.Since(t0).Seconds()
}

// BenchmarkRolloutZeroLatency: the issue asks for at least 500 episodes/s
// of three turns at concurrency 8 against a loopback endpoint that answers
// at once. Each iteration plays the 972 Spider dev tasks whose database we
// have.
//
//	go test ./stages/rollout -run XXX -bench ZeroLatency -benchtime 3x
func BenchmarkRolloutZeroLatency(b *testing.B) {
	srv := rollouttest.New(b, rollouttest.ThreeTurns(nil))
	n := len(spiderTasks(b))
	var rate float64
	for b.Loop() {
		rate = benchRollout(b, srv.URL, n, 1, 8)
	}
	b.ReportMetric(rate, "episodes/s")
}

// BenchmarkRolloutLatency: with 200 ms per reply, concurrency 32 must give
// at least 25 times the throughput of concurrency 1. Each side plays about
// five seconds of episodes.
//
//	go test ./stages/rollout -run XXX -bench Latency -benchtime 1x
func BenchmarkRolloutLatency(b *testing.B) {
	srv := rollouttest.New(b, func(r *rollouttest.Request) rollouttest.Reply {
		rep := rollouttest.ThreeTurns(nil)(r)
		rep.Delay = 200 * time.Millisecond
		return rep
	})
	var one, many float64
	for b.Loop() {
		one = benchRollout(b, srv.URL, 8, 1, 1)
		many = benchRollout(b, srv.URL, 256, 1, 32)
	}
	b.ReportMetric(one, "episodes/s@1")
	b.ReportMetric(many, "episodes/s@32")
	b.ReportMetric(many/one, "speedup")
	if many/one < 25 {
		b.Log(fmt.Sprintf("speedup %.1f is below 25", many/one))
	}
}
