package ledger

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPackedCanonicalMatchesGeneric checks the hand-written encoder of
// version 2 bodies against the generic canonical JSON route byte for
// byte, and that the body reads back, through either route, as the
// points packed and as the same points written as version 1.
func TestPackedCanonicalMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := []string{"critic/score/mean", "actor/lr", "é\"\\\n", "\U0001F600", ""}
	specials := []float64{0, math.Copysign(0, -1), 1e21, 5e-324, math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}
	for trial := range 60 {
		var pts []MetricPoint
		for range rng.IntN(300) {
			v := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
			if rng.IntN(4) == 0 {
				v = specials[rng.IntN(len(specials))]
			}
			step := rng.Int64N(1<<54) - 1<<53
			if rng.IntN(3) > 0 && len(pts) > 0 {
				step = pts[len(pts)-1].Step + int64(rng.IntN(3))
			}
			pts = append(pts, MetricPoint{Step: step, Key: keys[rng.IntN(len(keys))], Value: v})
		}
		m := PackMetrics(pts)
		v1 := Metrics{Points: pts}
		if trial%3 > 0 {
			m.Source, m.Format, m.Cursor = "run-x.wandb", "wandb", map[string]int64{"offset": int64(trial), "records": 3}
			v1.Source, v1.Format, v1.Cursor = m.Source, m.Format, m.Cursor
		}
		fast, err := m.canonical()
		if err != nil {
			t.Fatal(err)
		}
		slow, err := CanonicalJSON(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("trial %d: canonical() and CanonicalJSON differ:\n%.300s\n%.300s", trial, fast, slow)
		}
		checkScanMetrics(t, fast)
		got, err := decodeMetrics(fast, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmpDiff(m, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("trial %d: packed (-written +read):\n%s", trial, diff)
		}
		b1, err := v1.canonical()
		if err != nil {
			t.Fatal(err)
		}
		asV1, err := decodeMetrics(b1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if asV1.BodyVersion != 1 {
			t.Fatalf("a body of version 1 decodes as version %d", asV1.BodyVersion)
		}
		asV1.BodyVersion = 2
		if diff := cmpDiff(got, asV1, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("trial %d: (-version 2 +version 1):\n%s", trial, diff)
		}
	}
}

// TestPackedRefusesWhatItCannotWrite: Append refuses a version 2 body no
// writer of it makes, saying what is wrong, rather than store it.
func TestPackedRefusesWhatItCannotWrite(t *testing.T) {
	good := PackMetrics([]MetricPoint{{Step: 1, Key: "a", Value: 1}, {Step: 2, Key: "a", Value: 2}})
	for want, m := range map[string]PackedMetrics{
		"body_version is 0":     {Series: good.Series},
		"1 values":              {BodyVersion: 2, Series: []PackedSeries{{Key: "a", Steps: good.Series[0].Steps, Values: good.Series[0].Values[:8]}}},
		"appears twice":         {BodyVersion: 2, Series: []PackedSeries{good.Series[0], good.Series[0]}},
		"at least one":          {BodyVersion: 2, Series: []PackedSeries{{Key: "a"}}},
		"value bits":            {BodyVersion: 2, Series: []PackedSeries{{Key: "a", Steps: good.Series[0].Steps[:8], Values: []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f}}}},
		"step 9007199254740994": {BodyVersion: 2, Series: []PackedSeries{{Key: "a", Steps: []byte{2, 0, 0, 0, 0, 0, 0x20, 0}, Values: good.Series[0].Values[:8]}}},
	} {
		if _, err := m.canonical(); err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("canonical: %v, want an error saying %q", err, want)
		}
	}
}

// FuzzDecodePackedMetrics feeds the decoder bodies of version 2: each
// reads as encoding/json reads it, or is refused by both; none panics.
func FuzzDecodePackedMetrics(f *testing.F) {
	for _, b := range metricBodies {
		if bytes.HasPrefix([]byte(b), metricsV2) {
			f.Add([]byte(b[len(metricsV2):]))
		}
	}
	f.Fuzz(func(t *testing.T, rest []byte) {
		checkScanMetrics(t, append(bytes.Clone(metricsV2), rest...))
	})
}
