package ledger

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// metricBodies are metrics bodies the scanner must read as encoding/json
// does, or leave to it: canonical ones, and others in every way it checks.
var metricBodies = []string{
	`{"points":[[1,"loss",0.5],[2,"loss",null],[2,"kl",1e-7]]}`,
	`{"cursor":{"a.jsonl":120,"b}":3},"format":"verl","points":[[3,"x",-2.5e+30]],"source":"m.jsonl"}`,
	`{"points":null}`,
	`{"points":[]}`,
	`{"format":"verl","points":[[1,"reward",1]],"source":"r"}`,
	`{"points":[[1,"a\"b",1]]}`,
	`{"points":[[1.5,"a",1]]}`,
	`{"points":[[1,"a",1.]]}`,
	`{"points":[[1,"a",01]]}`,
	`{"points":[[1,"a",1e400]]}`,
	`{"points":[[1,"a",1]],"extra":1}`,
	"{\"points\":[[1,\"\xff\",1]]}",
	`{"points":[[-0,"a",-0]]}`,
	`{"points":[[1,"a",1]]} `,
}

func TestScanMetricsAgreesWithJSON(t *testing.T) {
	for _, body := range metricBodies {
		checkScanMetrics(t, []byte(body))
	}
	m := Metrics{Source: "s", Format: "f", Cursor: map[string]int64{"k": 9}}
	for i := range 1000 {
		m.Points = append(m.Points, MetricPoint{Step: int64(i), Key: []string{"loss", "kl", "ü/x"}[i%3], Value: math.Pow(1.37, float64(i%300-150))})
	}
	m.Points = append(m.Points, MetricPoint{Step: 7, Key: "nan", Value: math.NaN()})
	b, err := m.canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scanMetrics(b); !ok {
		t.Errorf("a canonical body was left to encoding/json")
	}
	checkScanMetrics(t, b)
}

// checkScanMetrics checks that decodeMetrics, and the checked view's
// decodeLazy, read body as encoding/json does: the same points, or an
// error from each.
func checkScanMetrics(t *testing.T, body []byte) {
	t.Helper()
	var want Metrics
	werr := json.Unmarshal(body, &want)
	got, gerr := decodeMetrics(body)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: encoding/json: %v; decodeMetrics: %v", body, werr, gerr)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); werr == nil && diff != "" {
		t.Errorf("%.80s (-encoding/json +decodeMetrics):\n%s", body, diff)
	}
	d, lerr := decodeLazy(Entry{Seq: 1, Body: body})
	if (werr == nil) != (lerr == nil) {
		t.Fatalf("%s: encoding/json: %v; decodeLazy: %v", body, werr, lerr)
	}
	if werr != nil {
		return
	}
	var lazy []MetricPoint
	for i, p := range d.pts {
		v, ok := d.value(p)
		if !ok || d.seq != 1 {
			t.Fatalf("%s: point %d: value at %d+%d does not parse, or seq %d", body, i, p.off, p.n, d.seq)
		}
		lazy = append(lazy, MetricPoint{Step: p.step, Key: d.keys[d.ids[i]], Value: v})
	}
	if diff := cmp.Diff(want.Points, lazy, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%.80s (-encoding/json +decodeLazy):\n%s", body, diff)
	}
}

func FuzzScanMetrics(f *testing.F) {
	for _, b := range metricBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(checkScanMetrics)
}

// TestKeyOrder: keys are numbered by first appearance whatever order
// they come in, the guess of the next key never stands in for the map,
// and strings and bytes of one key get one number.
func TestKeyOrder(t *testing.T) {
	var o keyOrder
	in := []string{"loss", "kl", "lr", "loss", "kl", "lr", "lr", "reward", "loss", "reward", "kl", "kl", "loss"}
	var got []int32
	for i, k := range in {
		if i%2 == 0 {
			got = append(got, o.of(k))
		} else {
			got = append(got, o.ofBytes([]byte(k)))
		}
	}
	want := []int32{0, 1, 2, 0, 1, 2, 2, 3, 0, 3, 1, 1, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"loss", "kl", "lr", "reward"}, o.keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}
