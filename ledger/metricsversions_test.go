package ledger_test

import (
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// versionBatches are metrics batches with what a body must carry over
// exactly: NaN, ±Inf and -0, a step logged twice for a key, steps that go
// down and steps at ±2^53, keys in changing orders and a key that first
// appears late; the last batch is large enough for the deriver's reused
// buffer.
func versionBatches() [][]ledger.MetricPoint {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := []string{"loss", "actor/lr", "reward/mean", "é\"\\/x", "late"}
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 5e-324, math.MaxFloat64}
	var batches [][]ledger.MetricPoint
	step := int64(0)
	for b, steps := range []int{1, 30, 30, 3000} {
		var pts []ledger.MetricPoint
		for range steps {
			switch rng.IntN(20) {
			case 0:
				step -= int64(rng.IntN(5)) // a restarted counter
			case 1:
				step = []int64{1 << 53, -(1 << 53)}[rng.IntN(2)]
			default:
				step += int64(rng.IntN(2)) // some steps logged twice
			}
			step = min(max(step, -(1<<53)), 1<<53)
			n := len(keys) - 1
			if b >= 2 {
				n = len(keys)
			}
			for _, i := range rng.Perm(n)[:1+rng.IntN(n)] {
				v := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
				if rng.IntN(8) == 0 {
					v = specials[rng.IntN(len(specials))]
				}
				pts = append(pts, ledger.MetricPoint{Step: step, Key: keys[i], Value: v})
			}
		}
		batches = append(batches, pts)
	}
	return batches
}

// metricsLedger appends batches to a new ledger, each as a body of version
// 1 (ledger.Metrics) or 2 (ledger.PackedMetrics), the last two together.
func metricsLedger(t *testing.T, batches [][]ledger.MetricPoint, version int) string {
	t.Helper()
	dir := t.TempDir()
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.StartRun(ctx, "rl", ledger.RunStart{Stage: "rl"}); err != nil {
		t.Fatal(err)
	}
	var recs []ledger.Record
	for i, pts := range batches {
		var body any = ledger.Metrics{Points: pts, Source: "m.jsonl", Format: "verl", Cursor: map[string]int64{"line": int64(len(pts))}}
		if version == 2 {
			m := ledger.PackMetrics(pts)
			m.Source, m.Format, m.Cursor = "m.jsonl", "verl", map[string]int64{"line": int64(len(pts))}
			body = m
		}
		recs = append(recs, ledger.Record{Kind: records.KindMetrics, Run: "rl", Body: body})
		if i < len(batches)-2 {
			if _, err := l.Append(ctx, recs...); err != nil {
				t.Fatal(err)
			}
			recs = nil
		}
	}
	if _, err := l.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// seriesRead is what every reader of a run's metrics reads: its keys, and
// each key's series with the seq behind each point.
type seriesRead struct {
	Keys   []string
	Series map[string][]ledger.MetricPoint
	Seqs   map[string][]int64
}

func readSeries(t *testing.T, l *ledger.Ledger) seriesRead {
	t.Helper()
	keys, err := l.MetricKeys(ctx, "rl")
	if err != nil {
		t.Fatal(err)
	}
	r := seriesRead{Keys: keys, Series: map[string][]ledger.MetricPoint{}, Seqs: map[string][]int64{}}
	for _, k := range keys {
		if r.Series[k], r.Seqs[k], err = l.Series(ctx, "rl", k); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// derivedRows are a ledger's metrics rows as stored.
func derivedRows(t *testing.T, dir string) [][]any {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT run, key, seq, n, step_deltas, vals FROM metrics ORDER BY run, key, seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		var run, key string
		var seq, n int64
		var steps, vals []byte
		if err := rows.Scan(&run, &key, &seq, &n, &steps, &vals); err != nil {
			t.Fatal(err)
		}
		out = append(out, []any{run, key, seq, n, steps, vals})
	}
	return out
}

// TestMetricsVersionsReadAlike: the same points appended as bodies of
// version 1 and of version 2 read back identical through every reader:
// the derived rows (as written, and as verify and a copy derive them
// again from the entries), the series and keys a ledger, a checked view
// and a copy return, and the one decoder, DecodeMetrics.
func TestMetricsVersionsReadAlike(t *testing.T) {
	batches := versionBatches()
	v1, v2 := metricsLedger(t, batches, 1), metricsLedger(t, batches, 2)
	// reflect.DeepEqual first: cmp walks the rows' blobs byte by byte.
	if a, b := derivedRows(t, v1), derivedRows(t, v2); !reflect.DeepEqual(a, b) {
		t.Errorf("derived metrics rows (-version 1 +version 2):\n%s", cmp.Diff(a, b))
	}
	var reads []seriesRead
	var versions [][]int
	for _, dir := range []string{v1, v2} {
		l, err := ledger.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if rep, err := l.Verify(ctx, ledger.VerifyOptions{}); err != nil || !rep.OK() {
			t.Fatalf("verify: %v %+v", err, rep)
		}
		var seen []int
		var decoded []ledger.PackedSeries
		for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindMetrics}) {
			if err != nil {
				t.Fatal(err)
			}
			v, err := records.BodyVersion(e.Body)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, v)
			m, err := ledger.DecodeMetrics(e.Body)
			if err != nil || m.BodyVersion != v || m.Format != "verl" || m.Source != "m.jsonl" || m.Cursor["line"] == 0 {
				t.Fatalf("entry %d: %+v, %v", e.Seq, m, err)
			}
			decoded = append(decoded, m.Series...)
		}
		versions = append(versions, seen)
		reads = append(reads, readSeries(t, l), seriesRead{Keys: []string{"decoded"}, Series: map[string][]ledger.MetricPoint{"decoded": points(decoded)}})
		c, err := openChecked(t, dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, readSeries(t, c))
		to := filepath.Join(t.TempDir(), "copy")
		if _, err := ledger.Copy(ctx, l, to, ledger.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		cp, err := ledger.Open(ctx, to)
		if err != nil {
			t.Fatal(err)
		}
		defer cp.Close()
		reads = append(reads, readSeries(t, cp))
		if a, b := derivedRows(t, dir), derivedRows(t, to); !reflect.DeepEqual(a, b) {
			t.Errorf("derived rows of the copy (-original +copy):\n%s", cmp.Diff(a, b))
		}
	}
	if diff := cmp.Diff([][]int{{1, 1, 1, 1}, {2, 2, 2, 2}}, versions); diff != "" {
		t.Fatalf("body versions written (-want +got):\n%s", diff)
	}
	names := []string{"ledger", "DecodeMetrics", "checked view", "copy"}
	for i := range names {
		if diff := cmp.Diff(reads[i], reads[len(names)+i], cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("%s (-version 1 +version 2):\n%s", names[i], diff)
		}
	}
	// What a version 1 body means: NaN and ±Inf read as NaN, -0 as 0.
	for _, p := range reads[0].Series["loss"] {
		if math.IsInf(p.Value, 0) || (p.Value == 0 && math.Signbit(p.Value)) {
			t.Fatalf("loss holds %v, which a metrics body cannot", p.Value)
		}
	}
}

// points are the points of series, in order.
func points(series []ledger.PackedSeries) []ledger.MetricPoint {
	var pts []ledger.MetricPoint
	for _, s := range series {
		for i := range s.Len() {
			pts = append(pts, s.At(i))
		}
	}
	return pts
}

// TestMalformedPackedBodyIsNamed: a metrics entry of version 2 whose
// arrays disagree (its hash recomputed, as someone holding this code
// could) is a verify finding naming its seq, and a checked view refuses
// it naming the seq, rather than reading something else or panicking.
func TestMalformedPackedBodyIsNamed(t *testing.T) {
	for name, body := range map[string]string{
		"lengths disagree":    `{"body_version":2,"series":[{"key":"reward","steps":"AgI=","values":"AAAAAAAA0D8="}]}`,
		"not base64":          `{"body_version":2,"series":[{"key":"reward","steps":"A*==","values":"AAAAAAAA0D8="}]}`,
		"an infinite value":   `{"body_version":2,"series":[{"key":"reward","steps":"Ag==","values":"AAAAAAAA8H8="}]}`,
		"a version not known": `{"body_version":3,"series":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir, _ := tamperFixture(t)
			rewriteChain(t, dir, 13, 13, func(e *ledger.Entry) { e.Body = []byte(body) })
			rep := verifyDir(t, dir, ledger.VerifyOptions{})
			found := false
			for _, f := range rep.Findings {
				found = found || f.Check == "derived" && f.Seq == 13 && strings.Contains(f.Message, "metrics body")
			}
			if !found {
				t.Errorf("no derived finding for entry 13:\n%s", findings(rep))
			}
			c, err := openChecked(t, dir, 0)
			if err == nil {
				_, _, err = c.Series(ctx, "r1", "reward")
			}
			var te *ledger.TamperedError
			if !errors.As(err, &te) || te.Seq != 13 {
				t.Errorf("checked view: %v, want entry 13 refused", err)
			}
		})
	}
}
