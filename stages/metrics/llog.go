package metrics

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// The record framing of W&B's run-*.wandb files and SwanLab's (0.6+)
// backup.swanlab, both LevelDB's log format with a plain CRC-32 (wandb/wandb
// wandb/sdk/internal/datastore.py, SwanHubX/SwanLab swanlab/data/porter/
// datastore.py):
//
//	header  ident[4] magic uint16 version uint8   (little-endian, 7 bytes)
//	blocks of 32,768 bytes counted from offset 0, each a run of chunks:
//	chunk   crc uint32 length uint16 type uint8 payload[length]
//
// crc is CRC-32 (IEEE) of the type byte followed by the payload. A record is
// one FULL chunk or FIRST, MIDDLE…, LAST; a chunk never crosses its block,
// and fewer than 7 bytes left in a block are zero padding.
const (
	llogHeaderLen = 7
	llogBlockLen  = 32768
	llogChunkLen  = 7

	chunkFull   = 1
	chunkFirst  = 2
	chunkMiddle = 3
	chunkLast   = 4
)

// llogStop says why reading stopped before the end of the data: incomplete
// means the writer may still add the missing bytes (a short header, a
// payload past the end, a record whose LAST chunk is not there yet);
// otherwise the bytes are there and wrong.
type llogStop struct {
	Offset     int64 // absolute offset of the chunk at fault
	Incomplete bool
	Reason     string
}

func (e *llogStop) Error() string {
	return fmt.Sprintf("chunk at byte %d: %s", e.Offset, e.Reason)
}

// llogReader returns the records of a framed file, given as data starting
// at the absolute offset base.
type llogReader struct {
	data []byte
	base int64
	off  int64 // absolute offset of the next chunk
	rec  []byte
}

// checkLLogHeader checks the 7-byte file header against the writer's ident
// and magic and returns its version.
func checkLLogHeader(b []byte, ident string, magic uint16) (byte, error) {
	if len(b) < llogHeaderLen {
		return 0, fmt.Errorf("the file is %d bytes, shorter than its %d-byte header", len(b), llogHeaderLen)
	}
	if string(b[:4]) != ident || binary.LittleEndian.Uint16(b[4:6]) != magic {
		return 0, fmt.Errorf("the file does not start with the %s header (ident %q, magic 0x%04X). Try: name its format, PATH:FORMAT", ident, b[:4], binary.LittleEndian.Uint16(b[4:6]))
	}
	return b[6], nil
}

// next returns the next record, valid until the next call, and moves off
// past it; io.EOF when the data ends on a record boundary, or a *llogStop.
func (r *llogReader) next() ([]byte, error) {
	end := r.base + int64(len(r.data))
	r.rec = r.rec[:0]
	inRecord := false
	at := r.off // where the record starts: off is only moved once it is whole
	for {
		if left := llogBlockLen - at%llogBlockLen; left < llogChunkLen {
			at += left // zero padding
		}
		if at >= end {
			if inRecord {
				return nil, &llogStop{Offset: at, Incomplete: true, Reason: "the record's LAST chunk is not there yet"}
			}
			r.off = end
			return nil, io.EOF
		}
		if end-at < llogChunkLen {
			return nil, &llogStop{Offset: at, Incomplete: true, Reason: fmt.Sprintf("%d bytes of a 7-byte chunk header", end-at)}
		}
		h := r.data[at-r.base:]
		crc := binary.LittleEndian.Uint32(h)
		n := int64(binary.LittleEndian.Uint16(h[4:]))
		typ := h[6]
		if crc == 0 && n == 0 && typ == 0 {
			at += llogBlockLen - at%llogBlockLen // a zero header pads to the next block
			continue
		}
		left := llogBlockLen - at%llogBlockLen
		if llogChunkLen+n > left {
			return nil, &llogStop{Offset: at, Reason: fmt.Sprintf("a %d-byte chunk crosses its block", n)}
		}
		if at+llogChunkLen+n > end {
			return nil, &llogStop{Offset: at, Incomplete: true, Reason: fmt.Sprintf("type %d needs %d payload bytes, only %d present", typ, n, end-at-llogChunkLen)}
		}
		payload := h[llogChunkLen : llogChunkLen+n]
		if crc32.Update(crc32.ChecksumIEEE([]byte{typ}), crc32.IEEETable, payload) != crc {
			return nil, &llogStop{Offset: at, Reason: "checksum mismatch"}
		}
		if int64(len(r.rec))+n > maxRecordLen {
			return nil, &llogStop{Offset: at, Reason: fmt.Sprintf("a record longer than the limit of %d bytes", maxRecordLen)}
		}
		switch {
		case typ == chunkFull && !inRecord:
			r.off = at + llogChunkLen + n
			return payload, nil
		case typ == chunkFirst && !inRecord:
			inRecord = true
			r.rec = append(r.rec, payload...)
		case (typ == chunkMiddle || typ == chunkLast) && inRecord:
			r.rec = append(r.rec, payload...)
			if typ == chunkLast {
				r.off = at + llogChunkLen + n
				return r.rec, nil
			}
		case typ >= chunkFull && typ <= chunkLast:
			return nil, &llogStop{Offset: at, Reason: fmt.Sprintf("chunk type %d out of order", typ)}
		default:
			return nil, &llogStop{Offset: at, Reason: fmt.Sprintf("unknown chunk type %d", typ)}
		}
		at += llogChunkLen + n
	}
}
