package metrics

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The test-side TensorBoard writer: the same framing and field numbers as
// the reader, written independently with protowire.Append*.

// appendRecord frames data as one TFRecord.
func appendRecord(dst, data []byte) []byte {
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], uint64(len(data)))
	dst = append(dst, hdr[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, maskedCRC32C(hdr[:]))
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC32C(data))
}

// tbValue is one Summary.Value to write: a simple_value unless tensor is set.
type tbValue struct {
	tag    string
	simple float32
	tensor []byte
}

// eventBytes encodes an Event with a wall time, a step and a summary.
func eventBytes(step int64, values ...tbValue) []byte {
	var summary []byte
	for _, v := range values {
		var val []byte
		val = protowire.AppendTag(val, valueTag, protowire.BytesType)
		val = protowire.AppendString(val, v.tag)
		if v.tensor != nil {
			val = protowire.AppendTag(val, valueTensor, protowire.BytesType)
			val = protowire.AppendBytes(val, v.tensor)
		} else {
			val = protowire.AppendTag(val, valueSimple, protowire.Fixed32Type)
			val = protowire.AppendFixed32(val, math.Float32bits(v.simple))
		}
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, val)
	}
	var ev []byte
	ev = protowire.AppendTag(ev, 1, protowire.Fixed64Type) // wall_time
	ev = protowire.AppendFixed64(ev, math.Float64bits(1.7e9+float64(step)))
	ev = protowire.AppendTag(ev, eventStep, protowire.VarintType)
	ev = protowire.AppendVarint(ev, uint64(step))
	ev = protowire.AppendTag(ev, eventSummary, protowire.BytesType)
	return protowire.AppendBytes(ev, summary)
}

// fileVersionEvent is the first event of every event file.
func fileVersionEvent() []byte {
	var ev []byte
	ev = protowire.AppendTag(ev, 1, protowire.Fixed64Type)
	ev = protowire.AppendFixed64(ev, math.Float64bits(1.7e9))
	ev = protowire.AppendTag(ev, 3, protowire.BytesType) // file_version
	return protowire.AppendString(ev, "brain.Event:2")
}

// tensorBytes encodes a TensorProto; shape nil means rank 0.
func tensorBytes(dtype uint64, shape []int64, fields func([]byte) []byte) []byte {
	var t []byte
	t = protowire.AppendTag(t, tensorDtype, protowire.VarintType)
	t = protowire.AppendVarint(t, dtype)
	if shape != nil {
		var sh []byte
		for _, n := range shape {
			var dim []byte
			dim = protowire.AppendTag(dim, dimSize, protowire.VarintType)
			dim = protowire.AppendVarint(dim, uint64(n))
			sh = protowire.AppendTag(sh, shapeDim, protowire.BytesType)
			sh = protowire.AppendBytes(sh, dim)
		}
		t = protowire.AppendTag(t, tensorShape, protowire.BytesType)
		t = protowire.AppendBytes(t, sh)
	}
	return fields(t)
}

// writeEvents writes an event file of the given events and returns its path.
func writeEvents(t testing.TB, events ...[]byte) string {
	t.Helper()
	var b []byte
	for _, ev := range events {
		b = appendRecord(b, ev)
	}
	path := t.TempDir() + "/events.out.tfevents.1700000000.host"
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
