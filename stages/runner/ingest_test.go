package runner

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics"
)

// TestMetricRecordsArePacked: ingestion writes every metrics entry as
// body version 2, splits a large read into entries of metricsPerEntry
// points with the cursor on the last, and each key's points read back as
// read, NaN and ±Inf as NaN and -0 as 0 (what version 1 kept), a step
// logged twice kept twice in order.
func TestMetricRecordsArePacked(t *testing.T) {
	var pts []metrics.Point
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}
	for s := range metricsPerEntry/2 + 10 {
		pts = append(pts, metrics.Point{Step: int64(s / 2), Key: "loss", Value: float64(s)},
			metrics.Point{Step: int64(s / 2), Key: "kl", Value: specials[s%len(specials)]})
	}
	l := ledgertest.New(t)
	if _, err := l.StartRun(ctx, "rl", ledger.RunStart{Stage: "rl"}); err != nil {
		t.Fatal(err)
	}
	recs := metricRecords("rl", "m.jsonl", metrics.FormatVerl, pts, metrics.Cursor{Offset: 99, Line: 7})
	if _, err := l.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	var cursors []map[string]int64
	got := map[string][]ledger.MetricPoint{}
	for _, e := range entriesOf(t, l, "rl", records.KindMetrics) {
		if v, err := records.BodyVersion(e.Body); err != nil || v != 2 {
			t.Fatalf("entry %d is body version %d (%v), want 2", e.Seq, v, err)
		}
		m, err := ledger.DecodeMetrics(e.Body)
		if err != nil || m.Source != "m.jsonl" || m.Format != string(metrics.FormatVerl) {
			t.Fatalf("entry %d: %+v, %v", e.Seq, m, err)
		}
		cursors = append(cursors, m.Cursor)
		for _, s := range m.Series {
			for i := range s.Len() {
				got[s.Key] = append(got[s.Key], s.At(i))
			}
		}
	}
	if diff := cmp.Diff([]map[string]int64{nil, {"offset": 99, "line": 7, "records": 0}}, cursors, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("cursors (-want +got):\n%s", diff)
	}
	want := map[string][]ledger.MetricPoint{}
	for _, p := range pts {
		v := p.Value
		if math.IsInf(v, 0) {
			v = math.NaN()
		} else if v == 0 {
			v = 0
		}
		want[p.Key] = append(want[p.Key], ledger.MetricPoint{Step: p.Step, Key: p.Key, Value: v})
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("points (-read +in the ledger):\n%s", diff)
	}
	for _, p := range got["kl"] {
		if p.Value == 0 && math.Signbit(p.Value) {
			t.Fatalf("-0 was kept: %v", p)
		}
	}
}
