package manifests

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecoders(t *testing.T) {
	nan := math.NaN()
	inf := math.Inf(1)
	tests := []struct {
		name  string
		dtype DType
		raw   []byte
		want  []float64
	}{
		{"f16 normals", "F16", u16s(0x3C00, 0xC000, 0x7BFF, 0x0400, 0x3555), []float64{1, -2, 65504, math.Ldexp(1, -14), math.Ldexp(1024+341, -12)}},
		{"f16 subnormals and zeros", "F16", u16s(0x0001, 0x03FF, 0x8000, 0x0000), []float64{math.Ldexp(1, -24), math.Ldexp(1023, -24), math.Copysign(0, -1), 0}},
		{"f16 specials", "F16", u16s(0x7C00, 0xFC00, 0x7E00, 0x7C01), []float64{inf, -inf, nan, nan}},
		{"bf16", "BF16", u16s(0x3F80, 0xC020, 0x7F80, 0x7FC0, 0x0001, 0x7F7F), []float64{1, -2.5, inf, nan, math.Ldexp(1, -133), math.Ldexp(255, 120)}},
		{"f8 e4m3fn", "F8_E4M3", []byte{0x38, 0x7E, 0xFE, 0x78, 0x08, 0x07, 0x01, 0x80, 0x7F, 0xFF}, []float64{1, 448, -448, 256, math.Ldexp(1, -6), math.Ldexp(7, -9), math.Ldexp(1, -9), math.Copysign(0, -1), nan, nan}},
		{"f8 e5m2", "F8_E5M2", []byte{0x3C, 0x7B, 0x04, 0x03, 0x7C, 0xFC, 0x7D, 0x7F}, []float64{1, 57344, math.Ldexp(1, -14), math.Ldexp(3, -16), inf, -inf, nan, nan}},
		{"bool", "BOOL", []byte{0, 1}, []float64{0, 1}},
		{"i64", "I64", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), []float64{-1}},
		{"u64", "U64", binary.LittleEndian.AppendUint64(nil, 1<<63), []float64{math.Ldexp(1, 63)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]float64, len(tt.want))
			dtypes[tt.dtype].decode(got, tt.raw)
			for i := range got {
				if !sameFloat(got[i], tt.want[i]) || math.Signbit(got[i]) != math.Signbit(tt.want[i]) && !math.IsNaN(got[i]) {
					t.Errorf("element %d: %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestMinifloatTables checks the tables against independent routes: every
// F16 normal against a float32 built from its bits, and every F8_E5M2 value
// against the F16 that is its top byte.
func TestMinifloatTables(t *testing.T) {
	f16 := f16Table()
	for u := range 1 << 16 {
		e := u >> 10 & 0x1F
		if e == 0 || e == 0x1F {
			continue
		}
		bits := uint32(u>>15)<<31 | uint32(e-15+127)<<23 | uint32(u&0x3FF)<<13
		if want := float64(math.Float32frombits(bits)); f16[u] != want {
			t.Fatalf("F16 %#04x: %v, want %v", u, f16[u], want)
		}
	}
	e5m2 := f8e5m2Table()
	for u := range 1 << 8 {
		if !sameFloat(e5m2[u], f16[u<<8]) {
			t.Fatalf("F8_E5M2 %#02x: %v, want %v", u, e5m2[u], f16[u<<8])
		}
	}
}

// TestDeltaRules pins the element rule at its edges.
func TestDeltaRules(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tol := DefaultTolerance
	tests := []struct {
		name          string
		a, b          float64
		changed, nonF int64
	}{
		{"equal", 3, 3, 0, 0},
		{"inside rtol", 1, 1 + 1e-6, 0, 0},
		{"just outside", 1, 1 + 1.1e-6 + 1e-8, 1, 0},
		{"inside atol at zero", 0, 9e-9, 0, 0},
		{"outside atol at zero", 0, 2e-8, 1, 0},
		{"signed zeros", math.Copysign(0, -1), 0, 0, 0},
		{"nan both", nan, nan, 0, 0},
		{"nan one side", nan, 1, 1, 1},
		{"nan other side", 1, nan, 1, 1},
		{"same infinity", inf, inf, 0, 0},
		{"opposite infinities", inf, -inf, 1, 1},
		{"overflowing delta", math.MaxFloat64, -math.MaxFloat64, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var acc deltaAcc
			changed := acc.add([]float64{tt.a}, []float64{tt.b}, tol)
			if changed != tt.changed || acc.nonFinite != tt.nonF {
				t.Errorf("changed %d non-finite %d, want %d %d", changed, acc.nonFinite, tt.changed, tt.nonF)
			}
			if math.IsNaN(acc.sumAbs) || math.IsInf(acc.sumSq, 0) || math.IsNaN(acc.sumSqA) {
				t.Errorf("non-finite statistics %+v", acc)
			}
		})
	}
}

// TestDiffCheckpoints changes one element of one tensor and checks that the
// diff finds it there and nowhere else, with and without manifests, and
// across different shardings.
func TestDiffCheckpoints(t *testing.T) {
	root := t.TempDir()
	model := testModel()
	all := []string{"model.embed.weight", "model.layers.0.w", "model.layers.0.b", "lm_head.weight", "scale"}
	base := filepath.Join(root, "base")
	writeCheckpoint(t, base, model, map[string][]string{"model.safetensors": all}, false)

	changed := slices.Clone(model)
	head := slices.Clone(changed[3].data)
	head[10] ^= 0x01 // lowest mantissa bit of element 5 of lm_head.weight
	changed[3].data = head
	rl := filepath.Join(root, "rl")
	writeCheckpoint(t, rl, changed, map[string][]string{
		"model-00001-of-00002.safetensors": all[:2], "model-00002-of-00002.safetensors": all[2:],
	}, true)

	refs := map[string]func() (CheckpointRef, CheckpointRef){
		"paths":     func() (CheckpointRef, CheckpointRef) { return CheckpointRef{Path: base}, CheckpointRef{Path: rl} },
		"manifests": func() (CheckpointRef, CheckpointRef) { return withManifest(t, base), withManifest(t, rl) },
	}
	var results []*CheckpointDiff
	for name, mk := range refs {
		t.Run(name, func(t *testing.T) {
			a, b := mk()
			d, err := DiffCheckpoints(t.Context(), a, b, DefaultTolerance)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, d)
			if d.TensorsChanged != 1 || d.ElementsChanged != 1 || d.TensorsIdentical != 4 || d.Elements != 32+16+4+32+1 {
				t.Fatalf("summary %+v", d)
			}
			for _, td := range d.Tensors {
				if td.Name != "lm_head.weight" {
					if !td.Identical || td.Changed != 0 || td.L2Delta != 0 || *td.RelL2Delta != 0 {
						t.Errorf("unchanged tensor reported %+v", td)
					}
					continue
				}
				a := float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(model[3].data[10:])) << 16))
				b := float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(head[10:])) << 16))
				delta := math.Abs(b - a)
				var normA float64
				for i := range 32 {
					v := float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(model[3].data[2*i:])) << 16))
					normA += v * v
				}
				want := TensorDelta{
					Name: "lm_head.weight", DType: "BF16", Shape: []int64{4, 8}, Elements: 32,
					Changed: 1, ChangedFraction: 1.0 / 32, MeanAbsDelta: delta / 32, MaxAbsDelta: delta,
					L2Delta: delta, RelL2Delta: ptr(delta / math.Sqrt(normA)),
				}
				if diff := cmp.Diff(want, td); diff != "" {
					t.Errorf("delta (-want +got):\n%s", diff)
				}
			}
		})
	}
	if len(results) == 2 {
		if diff := cmp.Diff(results[0], results[1]); diff != "" {
			t.Errorf("diff with manifests differs from diff without (-with +without):\n%s", diff)
		}
	}
}

func withManifest(t *testing.T, path string) CheckpointRef {
	return CheckpointRef{Path: path, Manifest: buildManifest(t, path)}
}

func ptr(f float64) *float64 { return &f }

// TestDiffIntegerBits checks that non-float tensors count any bit change,
// even one float64 cannot see.
func TestDiffIntegerBits(t *testing.T) {
	root := t.TempDir()
	for name, v := range map[string]uint64{"a": 1 << 60, "b": 1<<60 + 1} {
		writeTensors(t, filepath.Join(root, name+".safetensors"), nil,
			src("i", "I64", []int64{2}, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 7), v)))
	}
	d, err := DiffCheckpoints(t.Context(), CheckpointRef{Path: filepath.Join(root, "a.safetensors")},
		CheckpointRef{Path: filepath.Join(root, "b.safetensors")}, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	if td := d.Tensors[0]; td.Changed != 1 || td.Identical || td.L2Delta != 0 {
		t.Errorf("delta %+v, want one changed element with a zero float64 delta", td)
	}
}

// TestDiffMismatch lists every disagreement in one error.
func TestDiffMismatch(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a.safetensors"), filepath.Join(root, "b.safetensors")
	writeTensors(t, a, nil,
		src("only.a", "U8", []int64{1}, []byte{1}),
		src("dtype", "F32", []int64{1}, f32Bytes(1)),
		src("shape", "U8", []int64{2, 1}, []byte{1, 2}),
		src("same", "U8", []int64{1}, []byte{1}),
	)
	writeTensors(t, b, nil,
		src("only.b", "U8", []int64{1}, []byte{1}),
		src("dtype", "I32", []int64{1}, f32Bytes(1)),
		src("shape", "U8", []int64{1, 2}, []byte{1, 2}),
		src("same", "U8", []int64{1}, []byte{1}),
	)
	_, err := DiffCheckpoints(t.Context(), CheckpointRef{Path: a}, CheckpointRef{Path: b}, DefaultTolerance)
	var me *TensorMismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrTensorMismatch) {
		t.Fatalf("error %v, want a *TensorMismatchError", err)
	}
	want := []string{
		`"dtype": dtype F32 in A, I32 in B`,
		`"only.a": only in A`,
		`"only.b": only in B`,
		`"shape": shape [2 1] in A, [1 2] in B`,
	}
	if !slices.Equal(me.Mismatches, want) {
		t.Errorf("mismatches %q, want %q", me.Mismatches, want)
	}
	if msg := err.Error(); !strings.Contains(msg, a) || !strings.Contains(msg, "4 tensors do not match") {
		t.Errorf("message %q", msg)
	}
}

// TestDiffStaleManifest refuses a manifest that does not describe the files.
func TestDiffStaleManifest(t *testing.T) {
	other := buildManifest(t, filepath.Join(samples, "f.safetensors"))
	path := filepath.Join(samples, "overall.safetensors")
	_, err := DiffCheckpoints(t.Context(), CheckpointRef{Path: path, Manifest: other}, CheckpointRef{Path: path}, DefaultTolerance)
	if err == nil || !strings.Contains(err.Error(), "does not record the header of overall.safetensors") {
		t.Fatalf("error %v", err)
	}
}

// TestDiffSegments diffs a tensor spanning several work segments and
// compares with a plain one-pass computation.
func TestDiffSegments(t *testing.T) {
	n := 2*diffSegment + 12345
	rng := rand.New(rand.NewPCG(1, 2))
	a := make([]byte, n)
	b := make([]byte, n)
	for i := range a {
		a[i] = byte(rng.UintN(256))
		b[i] = a[i]
		if rng.IntN(7) == 0 {
			b[i] = byte(rng.UintN(256))
		}
	}
	root := t.TempDir()
	pa, pb := filepath.Join(root, "a.safetensors"), filepath.Join(root, "b.safetensors")
	writeTensors(t, pa, nil, src("w", "F8_E5M2", []int64{int64(n)}, a))
	writeTensors(t, pb, nil, src("w", "F8_E5M2", []int64{int64(n)}, b))
	d, err := DiffCheckpoints(t.Context(), CheckpointRef{Path: pa}, CheckpointRef{Path: pb}, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	var changed, nonFinite int64
	var sumAbs, maxAbs, sumSq, sumSqA float64
	for i := range n {
		x, y := minifloat(uint32(a[i]), 5, 2, true), minifloat(uint32(b[i]), 5, 2, true)
		dd := math.Abs(y - x)
		switch {
		case !math.IsInf(dd, 0) && !math.IsNaN(dd):
			sumAbs += dd
			sumSq += dd * dd
			maxAbs = max(maxAbs, dd)
			if dd > 1e-8+1e-6*math.Abs(x) {
				changed++
			}
		case x == y || math.IsNaN(x) && math.IsNaN(y):
		default:
			changed++
			nonFinite++
		}
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			sumSqA += x * x
		}
	}
	td := d.Tensors[0]
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	if td.Changed != changed || td.NonFinite != nonFinite || td.MaxAbsDelta != maxAbs ||
		!close(td.MeanAbsDelta, sumAbs/float64(int64(n)-nonFinite)) || !close(td.L2Delta, math.Sqrt(sumSq)) ||
		!close(*td.RelL2Delta, math.Sqrt(sumSq)/math.Sqrt(sumSqA)) {
		t.Errorf("delta %+v, want changed %d non-finite %d max %v", td, changed, nonFinite, maxAbs)
	}
	again, err := DiffCheckpoints(t.Context(), CheckpointRef{Path: pa}, CheckpointRef{Path: pb}, DefaultTolerance)
	if err != nil {
		t.Fatalf("second diff: %v", err)
	}
	if diff := cmp.Diff(d, again); diff != "" {
		t.Errorf("second diff differs (-first +second):\n%s", diff)
	}
}

func u16s(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

// BenchmarkTensorDiffBF16 diffs two bf16 checkpoints (-benchmib each) that
// differ in every element; bytes/s are the bytes of one checkpoint.
func BenchmarkTensorDiffBF16(b *testing.B) {
	dir := b.TempDir()
	size := writeBenchCheckpoint(b, filepath.Join(dir, "a"), *benchMiB, false)
	writeBenchCheckpoint(b, filepath.Join(dir, "b"), *benchMiB, true)
	b.SetBytes(size)
	for b.Loop() {
		d, err := DiffCheckpoints(b.Context(), CheckpointRef{Path: filepath.Join(dir, "a")}, CheckpointRef{Path: filepath.Join(dir, "b")}, DefaultTolerance)
		if err != nil {
			b.Fatal(err)
		}
		if d.TensorsChanged != len(d.Tensors) {
			b.Fatalf("%d of %d tensors changed", d.TensorsChanged, len(d.Tensors))
		}
	}
}

// TestKernelsAgree checks the machine's kernels, where it has them, against
// the portable ones: sums bit for bit, decoded values for all 65536 inputs.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 4, 8, 1000, diffBlock} {
		a, b := make([]float64, n), make([]float64, n)
		for i := range a {
			a[i] = rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20)
			b[i] = a[i]
			if rng.IntN(3) > 0 {
				b[i] += rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-50)
			}
		}
		var got, want laneSums
		sumLanes(a, b, DefaultTolerance, &got)
		sumLanesGo(a, b, DefaultTolerance, &want)
		if got != want {
			t.Errorf("n=%d: sumLanes %+v, want %+v", n, got, want)
		}
	}
	raw := make([]byte, 2<<16)
	for u := range 1 << 16 {
		binary.LittleEndian.PutUint16(raw[2*u:], uint16(u))
	}
	for _, tt := range []struct {
		dtype DType
		table *[1 << 16]float64
	}{{"BF16", bf16Table()}, {"F16", f16Table()}} {
		got := make([]float64, 1<<16)
		dtypes[tt.dtype].decode(got, raw)
		for u, v := range got {
			if !sameFloat(v, tt.table[u]) || math.Signbit(v) != math.Signbit(tt.table[u]) && !math.IsNaN(v) {
				t.Fatalf("%s %#04x: %v, want %v", tt.dtype, u, v, tt.table[u])
			}
		}
	}
}
