package manifests

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const samples = "../testdata/safetensors"

// TestRealSamples opens every sample file of the reference implementation
// and decodes each tensor: all hold -3, -2, -1, 0, 1, 2 in their dtype, with
// the unsigned ones wrapping.
func TestRealSamples(t *testing.T) {
	signed := []float64{-3, -2, -1, 0, 1, 2}
	tests := []struct {
		file  string
		dtype DType
		want  []float64
	}{
		{"B.safetensors", "U8", []float64{253, 254, 255, 0, 1, 2}},
		{"b.safetensors", "I8", signed},
		{"H.safetensors", "U16", []float64{65533, 65534, 65535, 0, 1, 2}},
		{"h.safetensors", "I16", signed},
		{"I.safetensors", "U32", []float64{1<<32 - 3, 1<<32 - 2, 1<<32 - 1, 0, 1, 2}},
		{"i.safetensors", "I32", signed},
		{"e.safetensors", "F16", signed},
		{"f.safetensors", "F32", signed},
		{"d.safetensors", "F64", signed},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := OpenSafetensors(filepath.Join(samples, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Tensors) != 1 || f.Metadata["test"] != "a" {
				t.Fatalf("tensors %v metadata %v", f.Tensors, f.Metadata)
			}
			ti := f.Tensors[0]
			if ti.DType != tt.dtype || !slices.Equal(ti.Shape, []int64{6}) {
				t.Fatalf("tensor %+v, want dtype %s shape [6]", ti, tt.dtype)
			}
			if got := readValues(t, f, ti); !slices.Equal(got, tt.want) {
				t.Errorf("values %v, want %v", got, tt.want)
			}
		})
	}
}

func readValues(t *testing.T, f *SafetensorsFile, ti TensorInfo) []float64 {
	t.Helper()
	raw, err := io.ReadAll(f.TensorReader(ti))
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float64, len(raw)/ti.DType.Size())
	dtypes[ti.DType].decode(vals, raw)
	return vals
}

// TestOverallDigests pins the digests of overall.safetensors. The expected
// values were computed outside Go, with b3sum 1.2.0 over bytes assembled by
// a Python script following the definitions in checkpoint.go, so they check
// the definitions as well as the code.
func TestOverallDigests(t *testing.T) {
	m, err := BuildCheckpointManifest(t.Context(), filepath.Join(samples, "overall.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"B": "1a7d8ffa7f20dd11ccd21285b4e568937640629500a3fd74c30decf5f612ca7e",
		"H": "12292c671560f30e0b42abbf2117e2d8d2412daf4fa3cbf5ce1c2f7e932be102",
		"I": "ece985fa6befddf07b520b6c005bb40236a6fe807b2131e8a03960e2111e88dc",
		"b": "1a7d8ffa7f20dd11ccd21285b4e568937640629500a3fd74c30decf5f612ca7e",
		"d": "9d9c206e4d3e99ccf8802672f873034b4d05d5e966c07cfe0be87a7d9c3b7d62",
		"e": "36732440e459f8ad09cc3a11b6c73402d49008ade97a8158b367340714575f71",
		"f": "570e3e9b7f8f9a181067c133e40f2356afea599a6bbebdf756bb201cddab0d3a",
		"h": "12292c671560f30e0b42abbf2117e2d8d2412daf4fa3cbf5ce1c2f7e932be102",
		"i": "ece985fa6befddf07b520b6c005bb40236a6fe807b2131e8a03960e2111e88dc",
	}
	if len(m.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(want))
	}
	for _, ti := range m.Tensors {
		if ti.Digest.Hex() != want[ti.Name] || ti.File != "overall.safetensors" {
			t.Errorf("tensor %q: digest %s in %s, want %s", ti.Name, ti.Digest.Hex(), ti.File, want[ti.Name])
		}
	}
	f := m.Files[0]
	checks := []struct{ what, got, want string }{
		{"header digest", f.HeaderDigest.Hex(), "ae77b138ebb7dd78abb059f34983cecf1eaeabdc2eec4d7c38f466ea25021a95"},
		{"file digest", f.Digest.Hex(), "2a8d6ad9b138c7de03b2514ef16bc18f234700b12dfe75b397fb379fed95e8f7"},
		{"model identity", m.Identity.Hex(), "23d11b088a931853f2acb189aba024350e979c7763c2259ce192bc31a8d24a2e"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s %s, want %s", c.what, c.got, c.want)
		}
	}
	if f.Kind != FileKindSafetensors || f.Size != 702 || m.Size != 702 {
		t.Errorf("file %+v, manifest size %d", f, m.Size)
	}
}

// TestBrokenFiles covers each way a file can be malformed: committed
// fixtures named for their defect, and files built here from a header
// string. Every error must name the file and, where one is to blame, the
// tensor.
func TestBrokenFiles(t *testing.T) {
	tests := []struct {
		name    string
		file    string // committed fixture, or
		header  string // header JSON of a file built here
		data    int    // data section length for header
		want    error
		message string
	}{
		{name: "truncated", file: "truncated.safetensors", want: ErrTruncated,
			message: `tensor "f": data_offsets [108,132] run past the end of the data section (116 bytes)`},
		{name: "truncated header", file: "truncated-header.safetensors", want: ErrTruncated,
			message: "header length 526 runs past the end of the file (300 bytes)"},
		{name: "duplicate key", file: "duplicate-key.safetensors", want: ErrDuplicateKey,
			message: `duplicate key "w.0" in header`},
		{name: "overlapping offsets", file: "overlapping-offsets.safetensors", want: ErrBadOffsets,
			message: `safetensors testdata/safetensors/overlapping-offsets.safetensors: tensor "w.1": data_offsets [10,20] overlap "w.0"`},
		{name: "corrupt header", file: "corrupt-header.safetensors", want: ErrBadHeader,
			message: `tensor "w.1": invalid character 's'`},
		{name: "duplicate field", header: `{"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}}`, data: 1,
			want: ErrDuplicateKey, message: `tensor "w": duplicate key "dtype"`},
		{name: "duplicate metadata", header: `{"__metadata__":{"a":"1","a":"2"}}`,
			want: ErrDuplicateKey, message: `duplicate key "a" in __metadata__`},
		{name: "unknown dtype", header: `{"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, data: 1,
			want: ErrUnknownDType, message: `tensor "w": unknown dtype "F4"`},
		{name: "size mismatch", header: `{"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,10]}}`, data: 10,
			want: ErrSizeMismatch, message: `tensor "w": shape [2 3] of BF16 needs 12 bytes, data_offsets [0,10] hold 10`},
		{name: "shape overflow", header: `{"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}}`, data: 1,
			want: ErrSizeMismatch, message: "more than 2^64"},
		{name: "negative dim", header: `{"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, data: 1,
			want: ErrBadHeader, message: `tensor "w": shape:`},
		{name: "reversed offsets", header: `{"w":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, data: 2,
			want: ErrBadOffsets, message: `tensor "w": data_offsets [2,1] are reversed`},
		{name: "three offsets", header: `{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, data: 1,
			want: ErrBadHeader, message: `tensor "w": data_offsets must be [begin,end]`},
		{name: "gap", header: `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, data: 3,
			want: ErrBadOffsets, message: `tensor "b": data_offsets [2,3] leave a gap after "a", which ends at 1`},
		{name: "gap at start", header: `{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, data: 2,
			want: ErrBadOffsets, message: `tensor "a": data_offsets [1,2] leave a gap at the start`},
		{name: "trailing data", header: `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, data: 3,
			want: ErrBadOffsets, message: `tensor "a": data section has 2 bytes after`},
		{name: "missing shape", header: `{"a":{"dtype":"U8","data_offsets":[0,1]}}`, data: 1,
			want: ErrBadHeader, message: `tensor "a": shape missing`},
		{name: "null dtype", header: `{"a":{"dtype":null,"shape":[1],"data_offsets":[0,1]}}`, data: 1,
			want: ErrBadHeader, message: `tensor "a": dtype missing`},
		{name: "not an object", header: `[1]`, want: ErrBadHeader, message: "header does not start with '{'"},
		{name: "leading space", header: ` {}`, want: ErrBadHeader, message: "header does not start with '{'"},
		{name: "trailing value", header: `{}{}`, want: ErrBadHeader, message: "data after the header object"},
		{name: "invalid utf8", header: "{\"\xff\":{}}", want: ErrBadHeader, message: "not valid UTF-8"},
		{name: "metadata not strings", header: `{"__metadata__":{"a":1}}`, want: ErrBadHeader,
			message: `__metadata__: value of "a" is not a string`},
		{name: "unclosed", header: `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}`, data: 1,
			want: ErrBadHeader, message: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", "safetensors", tt.file)
			if tt.file == "" {
				path = filepath.Join(t.TempDir(), "bad.safetensors")
				writeRaw(t, path, tt.header, make([]byte, tt.data))
			}
			f, err := OpenSafetensors(path)
			if err == nil {
				f.Close()
				t.Fatal("opened a broken file")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %q is not %v", err, tt.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "safetensors "+path+": ") || !strings.Contains(msg, tt.message) {
				t.Errorf("error %q\nwant it to name %s and say %q", msg, path, tt.message)
			}
		})
	}
}

func TestHeaderTooLarge(t *testing.T) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], MaxHeaderSize+1)
	_, err := readSafetensors(bytes.NewReader(b[:]), 1<<40, "huge.safetensors")
	if !errors.Is(err, ErrHeaderTooLarge) || !strings.Contains(err.Error(), "huge.safetensors") {
		t.Fatalf("error %v, want ErrHeaderTooLarge naming the file", err)
	}
	_, err = readSafetensors(bytes.NewReader(b[:4]), 4, "tiny.safetensors")
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v, want ErrTruncated", err)
	}
}

// TestWriteRoundTrip writes bf16, f8 and scalar tensors and reads them back.
func TestWriteRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	bf := bf16Bytes(1, -2.5, 0.1, 3e38)
	e4m3 := []byte{0x00, 0x38, 0xB8, 0x7E, 0x01, 0x7F}
	e5m2 := []byte{0x3C, 0x7C, 0xFC, 0x01}
	writeTensors(t, path, map[string]string{"format": "pt"},
		src("z.bf16", "BF16", []int64{2, 2}, bf),
		src("a.e4m3", "F8_E4M3", []int64{6}, e4m3),
		src("m.e5m2", "F8_E5M2", []int64{4}, e5m2),
		src("scalar", "F32", nil, f32Bytes(7)),
		src("empty", "I64", []int64{0, 3}, nil),
	)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(raw); n%8 != 0 {
		t.Errorf("header length %d is not padded to 8", n)
	}
	f, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
	want := map[string][]float64{
		"z.bf16": {1, -2.5, float64(math.Float32frombits(0x3dcc0000)), float64(math.Float32frombits(0x7f61_0000))},
		"a.e4m3": {0, 1, -1, 448, math.Ldexp(1, -9), math.NaN()},
		"m.e5m2": {1, math.Inf(1), math.Inf(-1), math.Ldexp(1, -16)},
		"scalar": {7},
		"empty":  {},
	}
	if len(f.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for _, ti := range f.Tensors {
		got := readValues(t, f, ti)
		if !slices.EqualFunc(got, want[ti.Name], sameFloat) {
			t.Errorf("%s: %v, want %v", ti.Name, got, want[ti.Name])
		}
		if ti.Name == "scalar" && ti.Shape == nil {
			t.Errorf("scalar shape is nil, want []")
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// FuzzSafetensorsHeader feeds arbitrary headers to the parser: it must not
// panic, and whatever it accepts must be self-consistent.
func FuzzSafetensorsHeader(f *testing.F) {
	for _, name := range []string{"overall.safetensors", "e.safetensors"} {
		raw, err := os.ReadFile(filepath.Join(samples, name))
		if err != nil {
			f.Fatal(err)
		}
		n := binary.LittleEndian.Uint64(raw)
		f.Add(raw[8:8+n], int64(len(raw))-8-int64(n))
	}
	f.Add([]byte(`{"a":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},"b":{"dtype":"F8_E5M2","shape":[0],"data_offsets":[2,2]}}`), int64(2))
	f.Add([]byte(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{}}`), int64(1))
	f.Fuzz(func(t *testing.T, header []byte, dataSize int64) {
		if dataSize < 0 {
			return
		}
		h, err := ParseSafetensorsHeader("fuzz", header, dataSize)
		if err != nil {
			var se *SafetensorsError
			if !errors.As(err, &se) || se.File != "fuzz" {
				t.Fatalf("error %v is not a *SafetensorsError naming the file", err)
			}
			return
		}
		seen := map[string]bool{}
		var pos int64
		for _, ti := range h.Tensors {
			if seen[ti.Name] || ti.Name == metadataKey {
				t.Fatalf("tensor %q repeated or reserved", ti.Name)
			}
			seen[ti.Name] = true
			elems := int64(1)
			for _, d := range ti.Shape {
				elems *= d
			}
			if !ti.DType.Known() || ti.Begin != pos || ti.Len() != elems*int64(ti.DType.Size()) {
				t.Fatalf("accepted inconsistent tensor %+v at %d", ti, pos)
			}
			pos = ti.End
		}
		if pos != dataSize {
			t.Fatalf("tensors cover %d of %d data bytes", pos, dataSize)
		}
		if pos > 1<<20 {
			return // too large to write back in a fuzz iteration
		}
		// What we accept, we can write back, and it reads the same.
		srcs := make([]TensorSource, len(h.Tensors))
		for i, ti := range h.Tensors {
			srcs[i] = TensorSource{ti.Name, ti.DType, ti.Shape, bytes.NewReader(make([]byte, ti.Len()))}
		}
		var buf bytes.Buffer
		if err := WriteSafetensors(&buf, h.Metadata, srcs); err != nil {
			t.Fatal(err)
		}
		again, err := readSafetensors(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "again")
		if err != nil {
			t.Fatalf("reading back what we wrote: %v", err)
		}
		if len(again.Tensors) != len(h.Tensors) || len(again.Metadata) != len(h.Metadata) {
			t.Fatalf("round trip changed the header: %+v != %+v", again.SafetensorsHeader, *h)
		}
		for i, ti := range again.Tensors {
			if u := h.Tensors[i]; ti.Name != u.Name || ti.DType != u.DType || !slices.Equal(ti.Shape, u.Shape) || ti.Len() != u.Len() {
				t.Fatalf("round trip changed tensor %+v to %+v", u, ti)
			}
		}
	})
}

// writeRaw writes a file of the given header string and data section.
func writeRaw(t testing.TB, path, header string, data []byte) {
	t.Helper()
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(append(b, header...), data...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// src is a TensorSource over bytes.
func src(name string, dtype DType, shape []int64, data []byte) TensorSource {
	return TensorSource{name, dtype, shape, bytes.NewReader(data)}
}

// writeTensors writes a safetensors file with WriteSafetensors.
func writeTensors(t testing.TB, path string, metadata map[string]string, tensors ...TensorSource) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSafetensors(f, metadata, tensors); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// bf16Bytes truncates each value to bf16.
func bf16Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(v)>>16))
	}
	return b
}

func f32Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
