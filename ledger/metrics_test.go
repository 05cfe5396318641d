package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMetricsCanonicalMatchesGeneric checks the hand-written encoder of
// metrics batches against the generic canonical JSON route, byte for byte.
func TestMetricsCanonicalMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"critic/score/mean", "actor/lr", "é\"\\\n", "timing_s/gen", "\U0001F600"}
	specials := []float64{0, math.Copysign(0, -1), 1e21, 1e-7, 5e-324, math.MaxFloat64, 0.1, 1 << 53, math.NaN(), math.Inf(1), math.Inf(-1)}
	for trial := range 50 {
		m := Metrics{Source: "out/metrics.jsonl", Format: "verl", Cursor: map[string]int64{"offset": int64(trial * 100), "line": 7, "records": 3}}
		if trial%3 == 0 {
			m.Source, m.Format, m.Cursor = "", "", nil
		}
		for range rng.IntN(50) {
			v := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
			if rng.IntN(4) == 0 {
				v = specials[rng.IntN(len(specials))]
			}
			m.Points = append(m.Points, MetricPoint{Step: rng.Int64N(1 << 40), Key: keys[rng.IntN(len(keys))], Value: v})
		}
		fast, err := m.canonical()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("trial %d:\nfast %s\nslow %s", trial, fast, slow)
		}
	}
}
