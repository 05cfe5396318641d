package stats

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"
)

// FuzzHolm checks Holm's invariants on arbitrary p-values: every adjusted
// value lies in [p, 1], the adjustment keeps the order of the raw
// p-values, and a rejected hypothesis has an adjusted p-value ≤ alpha.
func FuzzHolm(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1<<60), 1<<62))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p []float64
		for ; len(data) >= 8; data = data[8:] {
			p = append(p, float64(binary.LittleEndian.Uint64(data)>>11)*0x1p-53)
		}
		if len(p) == 0 {
			return
		}
		r, err := Holm(p, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p {
			if r.Adjusted[i] < p[i] || r.Adjusted[i] > 1 {
				t.Errorf("p[%d]=%v adjusted to %v, outside [p, 1]", i, p[i], r.Adjusted[i])
			}
			if r.Reject[i] && r.Adjusted[i] > 0.05 {
				t.Errorf("p[%d]=%v rejected with adjusted %v > alpha", i, p[i], r.Adjusted[i])
			}
			for j := range p {
				if p[i] <= p[j] && r.Adjusted[i] > r.Adjusted[j] {
					t.Errorf("p %v ≤ %v but adjusted %v > %v", p[i], p[j], r.Adjusted[i], r.Adjusted[j])
				}
			}
		}
	})
}

// FuzzPassAtK checks that pass@k is a probability, grows with k and with
// c, and equals c/n at k = 1.
func FuzzPassAtK(f *testing.F) {
	f.Add(uint16(10), uint16(3), uint16(2))
	f.Add(uint16(1000), uint16(1), uint16(999))
	f.Fuzz(func(t *testing.T, n16, c16, k16 uint16) {
		n := int(n16%2000) + 1
		c, k := int(c16)%(n+1), int(k16)%n+1
		p, err := PassAtK(n, c, k)
		if err != nil {
			t.Fatal(err)
		}
		if !(p >= 0 && p <= 1) {
			t.Fatalf("pass@%d with n=%d c=%d = %v, outside [0, 1]", k, n, c, p)
		}
		if k < n {
			if q, _ := PassAtK(n, c, k+1); q < p-1e-12 {
				t.Errorf("pass@%d = %v < pass@%d = %v (n=%d c=%d)", k+1, q, k, p, n, c)
			}
		}
		if c < n {
			if q, _ := PassAtK(n, c+1, k); q < p-1e-12 {
				t.Errorf("c=%d gives %v < c=%d gives %v (n=%d k=%d)", c+1, q, c, p, n, k)
			}
		}
		if p1, _ := PassAtK(n, c, 1); math.Abs(p1-float64(c)/float64(n)) > 1e-12 {
			t.Errorf("pass@1 = %v, want c/n = %v", p1, float64(c)/float64(n))
		}
	})
}

// FuzzMcNemar checks that the test is symmetric in b and c and that its
// p-values are probabilities with mid-p ≤ exact p.
func FuzzMcNemar(f *testing.F) {
	f.Add(uint16(10), uint16(2))
	f.Add(uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, b16, c16 uint16) {
		b, c := int(b16%5000), int(c16%5000)
		r, err := McNemar(b, c)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := McNemar(c, b)
		s.B, s.C = r.B, r.C
		if s != r {
			t.Errorf("McNemar(%d, %d) = %+v but swapped gives %+v", b, c, r, s)
		}
		if !(r.ExactP >= 0 && r.ExactP <= 1 && r.MidP >= 0 && r.MidP <= r.ExactP) {
			t.Errorf("b=%d c=%d: exact p %v, mid-p %v", b, c, r.ExactP, r.MidP)
		}
	})
}

// FuzzValueJSON checks that a Value survives a JSON round trip.
func FuzzValueJSON(f *testing.F) {
	f.Add(0.0, true)
	f.Add(1e-300, true)
	f.Add(0.0, false)
	f.Fuzz(func(t *testing.T, x float64, defined bool) {
		v := Value{}
		if defined {
			v = Defined(x)
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back Value
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if back != v {
			t.Errorf("%#v → %s → %#v", v, data, back)
		}
	})
}
