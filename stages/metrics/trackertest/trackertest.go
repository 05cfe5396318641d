// Package trackertest writes experiment-tracker files for tests and
// benchmarks: W&B's run-*.wandb record framing and records, written from
// the published format (wandb/wandb wandb/sdk/internal/datastore.py and
// wandb/proto/wandb_internal.proto) independently of the reader in
// package metrics, so that a test of one checks the other.
package trackertest

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// The LevelDB-log framing W&B and SwanLab use.
const (
	blockLen  = 32768
	chunkHead = 7
)

// Writer builds a framed record file in memory: records split into
// FIRST/MIDDLE/LAST chunks at block boundaries, fewer than 7 bytes left in
// a block padded with zeros, as datastore.py writes them.
type Writer struct {
	B []byte
}

// NewWriter starts a file with the 7-byte header ident, magic, version.
func NewWriter(ident string, magic uint16, version byte) *Writer {
	w := &Writer{B: []byte(ident)}
	w.B = binary.LittleEndian.AppendUint16(w.B, magic)
	w.B = append(w.B, version)
	return w
}

// NewWandB starts a run-*.wandb file (":W&B", 0xBEE1, version 0).
func NewWandB() *Writer { return NewWriter(":W&B", 0xBEE1, 0) }

// Record appends one record.
func (w *Writer) Record(data []byte) {
	first := true
	for {
		left := blockLen - len(w.B)%blockLen
		if left < chunkHead {
			w.B = append(w.B, make([]byte, left)...)
			left = blockLen
		}
		n := min(len(data), left-chunkHead)
		last := n == len(data)
		typ := byte(3) // MIDDLE
		switch {
		case first && last:
			typ = 1 // FULL
		case first:
			typ = 2 // FIRST
		case last:
			typ = 4 // LAST
		}
		crc := crc32.Update(crc32.ChecksumIEEE([]byte{typ}), crc32.IEEETable, data[:n])
		w.B = binary.LittleEndian.AppendUint32(w.B, crc)
		w.B = binary.LittleEndian.AppendUint16(w.B, uint16(n))
		w.B = append(w.B, typ)
		w.B = append(w.B, data[:n]...)
		data, first = data[n:], false
		if last {
			return
		}
	}
}

// Field numbers of wandb_internal.proto used here.
const (
	recordHistory = 2
	recordExit    = 18
	historyItem   = 1
	itemKey       = 1
	itemNestedKey = 2
	itemValueJSON = 16
	exitCode      = 1
)

// Item is one history value: Key, or NestedKey when set (W&B's nested
// path), and its JSON text.
type Item struct {
	Key       string
	NestedKey []string
	JSON      string
}

// History encodes a Record holding one history row with _step = step
// followed by items.
func History(step int64, items ...Item) []byte {
	var row []byte
	add := func(it Item) {
		var b []byte
		if len(it.NestedKey) == 0 {
			b = protowire.AppendTag(b, itemKey, protowire.BytesType)
			b = protowire.AppendString(b, it.Key)
		}
		for _, k := range it.NestedKey {
			b = protowire.AppendTag(b, itemNestedKey, protowire.BytesType)
			b = protowire.AppendString(b, k)
		}
		b = protowire.AppendTag(b, itemValueJSON, protowire.BytesType)
		b = protowire.AppendString(b, it.JSON)
		row = protowire.AppendTag(row, historyItem, protowire.BytesType)
		row = protowire.AppendBytes(row, b)
	}
	add(Item{Key: "_step", JSON: strconv.FormatInt(step, 10)})
	for _, it := range items {
		add(it)
	}
	var rec []byte
	rec = protowire.AppendTag(rec, recordHistory, protowire.BytesType)
	return protowire.AppendBytes(rec, row)
}

// Exit encodes a Record holding a RunExitRecord with code.
func Exit(code int32) []byte {
	var ex []byte
	ex = protowire.AppendTag(ex, exitCode, protowire.VarintType)
	ex = protowire.AppendVarint(ex, uint64(int64(code)))
	var rec []byte
	rec = protowire.AppendTag(rec, recordExit, protowire.BytesType)
	return protowire.AppendBytes(rec, ex)
}

// Float is a value as Python's json.dumps writes it (repr: shortest
// round trip).
func Float(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WandBRun returns a whole run-*.wandb file of steps history rows of keys
// metrics each (train/metric_00, ...), ending with exit code 0: the run the
// ingest benchmarks read.
func WandBRun(steps, keys int) []byte {
	w := NewWandB()
	items := make([]Item, keys)
	for s := range steps {
		for k := range items {
			items[k] = Item{Key: fmt.Sprintf("train/metric_%02d", k), JSON: Float(float64(s)*1.000123 + float64(k)/7)}
		}
		w.Record(History(int64(s), items...))
	}
	w.Record(Exit(0))
	return w.B
}
