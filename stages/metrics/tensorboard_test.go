package metrics

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestTensorBoardRoundTrip(t *testing.T) {
	path := writeEvents(t,
		fileVersionEvent(),
		eventBytes(1, tbValue{tag: "reward/avg_raw_reward", simple: 0.25}, tbValue{tag: "policy/policy_kl", simple: 0.001}),
		eventBytes(2, tbValue{tag: "reward/avg_raw_reward", simple: 0.5}),
	)
	pts, st, err := ParseFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{1, "reward/avg_raw_reward", 0.25},
		{1, "policy/policy_kl", float64(float32(0.001))},
		{2, "reward/avg_raw_reward", 0.5},
	}
	if diff := cmp.Diff(want, pts); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	if st.Records != 2 || st.Ignored != 1 || st.PendingBytes != 0 {
		t.Errorf("stats = %+v, want 2 records, 1 ignored (file_version), 0 pending", st)
	}
}

func TestTensorScalars(t *testing.T) {
	packedFloat := func(vs ...float32) func([]byte) []byte {
		return func(b []byte) []byte {
			var p []byte
			for _, v := range vs {
				p = protowire.AppendFixed32(p, math.Float32bits(v))
			}
			b = protowire.AppendTag(b, tensorFloat, protowire.BytesType)
			return protowire.AppendBytes(b, p)
		}
	}
	tests := []struct {
		name   string
		tensor []byte
		want   float64
		ok     bool
	}{
		{"rank-0 packed float_val", tensorBytes(dtFloat, nil, packedFloat(0.75)), 0.75, true},
		{"shape [1] float_val", tensorBytes(dtFloat, []int64{1}, packedFloat(1.5)), 1.5, true},
		{"unpacked float_val", tensorBytes(dtFloat, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, tensorFloat, protowire.Fixed32Type)
			return protowire.AppendFixed32(b, math.Float32bits(2.5))
		}), 2.5, true},
		{"double_val", tensorBytes(dtDouble, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, tensorDouble, protowire.BytesType)
			return protowire.AppendBytes(b, protowire.AppendFixed64(nil, math.Float64bits(0.125)))
		}), 0.125, true},
		{"int64_val", tensorBytes(dtInt64, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, tensorInt64, protowire.BytesType)
			return protowire.AppendBytes(b, protowire.AppendVarint(nil, uint64(1<<40)))
		}), 1 << 40, true},
		{"negative int_val", tensorBytes(dtInt32, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, tensorInt32, protowire.VarintType)
			minus3 := int64(-3)
			return protowire.AppendVarint(b, uint64(minus3))
		}), -3, true},
		{"float tensor_content", tensorBytes(dtFloat, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, tensorContent, protowire.BytesType)
			return protowire.AppendBytes(b, binary.LittleEndian.AppendUint32(nil, math.Float32bits(3.25)))
		}), 3.25, true},
		{"double tensor_content", tensorBytes(dtDouble, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, tensorContent, protowire.BytesType)
			return protowire.AppendBytes(b, binary.LittleEndian.AppendUint64(nil, math.Float64bits(-0.5)))
		}), -0.5, true},
		{"vector is not a scalar", tensorBytes(dtFloat, []int64{2}, packedFloat(1, 2)), 0, false},
		{"constant-filled vector is not a scalar", tensorBytes(dtFloat, []int64{3}, packedFloat(1)), 0, false},
		{"string tensor is not a scalar", tensorBytes(7, nil, func(b []byte) []byte {
			b = protowire.AppendTag(b, 8, protowire.BytesType)
			return protowire.AppendString(b, "hello")
		}), 0, false},
		{"empty tensor", tensorBytes(dtFloat, nil, func(b []byte) []byte { return b }), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := tensorScalar(tt.tensor)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.ok || got != tt.want {
				t.Errorf("tensorScalar = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTensorBoardSkipsNonScalars(t *testing.T) {
	image := tbValue{tag: "samples", tensor: tensorBytes(7, []int64{3}, func(b []byte) []byte { return b })}
	path := writeEvents(t, eventBytes(4, tbValue{tag: "loss", simple: 1}, image))
	pts, st, err := ParseFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 || st.Skipped != 1 {
		t.Errorf("points = %v, stats = %+v; want 1 point and 1 skipped", pts, st)
	}
}

func TestTensorBoardTruncatedTail(t *testing.T) {
	full := appendRecord(appendRecord(nil, eventBytes(1, tbValue{tag: "a", simple: 1})), eventBytes(2, tbValue{tag: "a", simple: 2}))
	first := len(appendRecord(nil, eventBytes(1, tbValue{tag: "a", simple: 1})))
	for cut := first; cut < len(full); cut++ {
		path := t.TempDir() + "/events.out.tfevents.x"
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		tl, err := NewTailer(path, Options{}, Cursor{})
		if err != nil {
			t.Fatal(err)
		}
		pts, err := tl.Final()
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(pts) != 1 || pts[0].Step != 1 {
			t.Fatalf("cut at %d: points = %v, want step 1 only", cut, pts)
		}
		if got, want := tl.Stats().PendingBytes, int64(cut-first); got != want {
			t.Errorf("cut at %d: pending = %d, want %d", cut, got, want)
		}
		if got := tl.Cursor().Offset; got != int64(first) {
			t.Errorf("cut at %d: cursor = %d, want %d", cut, got, first)
		}
	}
}

// TestTensorBoardHugeLengthAllocatesLittle: a record header that claims
// the largest allowed length, with none of the data yet, is a truncated
// tail like any other, and reading it costs memory in proportion to the
// bytes present, not the bytes claimed (12 bytes used to allocate 256 MiB;
// the input is also a FuzzTFRecord seed, huge-length-truncated).
func TestTensorBoardHugeLengthAllocatesLittle(t *testing.T) {
	first := appendRecord(nil, eventBytes(1, tbValue{tag: "a", simple: 1}))
	var hdr [tfrecordHeaderLen]byte
	binary.LittleEndian.PutUint64(hdr[:8], maxRecordLen)
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC32C(hdr[:8]))
	path := t.TempDir() + "/events.out.tfevents.x"
	if err := os.WriteFile(path, append(append(first, hdr[:]...), "partial"...), 0o644); err != nil {
		t.Fatal(err)
	}
	tl, err := NewTailer(path, Options{}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pts, err := tl.Next()
	runtime.ReadMemStats(&after)
	if err != nil || len(pts) != 1 || tl.Stats().PendingBytes != int64(len(hdr)+len("partial")) {
		t.Fatalf("points %v, pending %d, %v; want step 1 and the rest pending", pts, tl.Stats().PendingBytes, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("reading %d bytes allocated %d MiB", len(first)+len(hdr)+len("partial"), got>>20)
	}
}

func TestTensorBoardBadCRC(t *testing.T) {
	rec1 := appendRecord(nil, eventBytes(1, tbValue{tag: "a", simple: 1}))
	rec2 := appendRecord(nil, eventBytes(2, tbValue{tag: "a", simple: 2}))
	rec3 := appendRecord(nil, eventBytes(3, tbValue{tag: "a", simple: 3}))
	tests := []struct {
		name string
		flip int // byte of rec2 to corrupt
	}{
		{"length", 0},
		{"length crc", 9},
		{"data", tfrecordHeaderLen + 2},
		{"data crc", len(rec2) - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := bytes.Clone(rec2)
			bad[tt.flip] ^= 0x40
			path := t.TempDir() + "/events.out.tfevents.x"
			if err := os.WriteFile(path, slices.Concat(rec1, bad, rec3), 0o644); err != nil {
				t.Fatal(err)
			}
			pts, _, err := ParseFile(path, Options{})
			var pe *ParseError
			if !errors.Is(err, ErrBadCRC) || !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError wrapping ErrBadCRC", err)
			}
			if pe.Offset != int64(len(rec1)) || pe.Path != path {
				t.Errorf("error at %s byte %d, want %s byte %d", pe.Path, pe.Offset, path, len(rec1))
			}
			if len(pts) != 1 {
				t.Errorf("points before the fault = %v, want step 1", pts)
			}
		})
	}
}

// FuzzTFRecord feeds arbitrary bytes to the record reader and the event
// decoder (they must fail cleanly, never panic) and checks that any payload
// framed by the test writer reads back unchanged.
func FuzzTFRecord(f *testing.F) {
	f.Add(appendRecord(nil, eventBytes(3, tbValue{tag: "x", simple: 1})), []byte("payload"))
	f.Add([]byte{1, 2, 3}, []byte{})
	f.Fuzz(func(t *testing.T, raw, payload []byte) {
		rr := recordReader{r: bufio.NewReader(bytes.NewReader(raw))}
		var sk sink
		for {
			data, err := rr.next()
			if err != nil {
				break
			}
			_ = decodeEvent(&sk, data)
		}
		framed := appendRecord(appendRecord(nil, payload), payload)
		rr = recordReader{r: bufio.NewReader(bytes.NewReader(framed))}
		for range 2 {
			data, err := rr.next()
			if err != nil || !bytes.Equal(data, payload) {
				t.Fatalf("round trip = %q, %v; want %q", data, err, payload)
			}
		}
		if _, err := rr.next(); err != io.EOF {
			t.Fatalf("after the last record: %v, want io.EOF", err)
		}
	})
}
