package ledger

import (
	"math"
	"reflect"
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
	`{"points":[[1,"a",1]],"body_version":3}`,
	// Version 2: canonical, then every way a body can be malformed.
	`{"body_version":2,"cursor":{"offset":9},"format":"wandb","series":[{"key":"loss","steps":"AgI=","values":"AAAAAAAA4D8BAAAAAAD4fw=="},{"key":"kl","steps":"BgAB","values":"AAAAAAAA4D8AAAAAAADwPwAAAAAAAPA/"}],"source":"run.wandb"}`,
	`{"body_version":2,"series":null}`,
	`{"body_version":2,"series":[]}`,
	`{"body_version":2,"series":[{"key":"a\"b","steps":"Ag==","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ag==","values":"AAAAAAAA8D8="},{"key":"a","steps":"Ag==","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"AgI=","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ag==","values":"AAAAAAAA8A=="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"","values":""}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ah==","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"A\ng==","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"ggA=","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"gg==","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"gICAgICAgIAB","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"goCAgICAgCA=","values":"AAAAAAAA8D8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ag==","values":"AAAAAAAA8H8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ag==","values":"AAAAAAAAAIA="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ag==","values":"AAAAAAAA+H8="}]}`,
	`{"body_version":2,"series":[{"key":"a","steps":"Ag==","values":"AAAAAAAA8D8=","n":1}]}`,
	`{"body_version":2,"points":[],"series":[]}`,
	`{"series":[],"body_version":2}`,
	`{"body_version":2,"series":[]} `,
	`{"body_version":2.0,"series":[]}`,
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
// decodeLazy, read body as encoding/json does: the same series, or an
// error from each.
func checkScanMetrics(t *testing.T, body []byte) {
	t.Helper()
	want, werr := decodeMetricsJSON(body, nil)
	got, gerr := decodeMetrics(body, nil)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%.200s: encoding/json: %v; decodeMetrics: %v", body, werr, gerr)
	}
	if werr != nil {
		return
	}
	if diff := cmpDiff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%.80s (-encoding/json +decodeMetrics):\n%s", body, diff)
	}
	d, lerr := decodeLazy(Entry{Seq: 1, Body: body})
	if lerr != nil {
		t.Fatalf("%.200s: encoding/json reads it; decodeLazy: %v", body, lerr)
	}
	if diff := cmp.Diff(seriesKeys(want.Series), d.keys, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%.80s: keys (-encoding/json +decodeLazy):\n%s", body, diff)
	}
	for i, s := range want.Series {
		if i >= len(d.keys) {
			break
		}
		lazy, err := d.appendKey(nil, int32(i), s.Key)
		if err != nil || d.count(int32(i)) != len(lazy) {
			t.Fatalf("%.200s: key %q: %v, or %d points counted, %d read", body, s.Key, err, d.count(int32(i)), len(lazy))
		}
		if diff := cmp.Diff(expand(s), lazy, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%.80s: key %q (-encoding/json +decodeLazy):\n%s", body, s.Key, diff)
		}
	}
}

// cmpDiff is cmp.Diff(want, got, opts...), or "" at once for values that
// reflect.DeepEqual finds equal (and so does cmp, under options that only
// widen equality): cmp walks a []byte element by element, which for
// packed series was most of these tests' time.
func cmpDiff(want, got any, opts ...cmp.Option) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, opts...)
}

// seriesKeys are the keys of series, in order.
func seriesKeys(series []PackedSeries) []string {
	var keys []string
	for _, s := range series {
		keys = append(keys, s.Key)
	}
	return keys
}

// expand is s's points.
func expand(s PackedSeries) []MetricPoint {
	var pts []MetricPoint
	for i := range s.Len() {
		pts = append(pts, s.At(i))
	}
	return pts
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
