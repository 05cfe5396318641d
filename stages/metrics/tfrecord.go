package metrics

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// TFRecord framing, as TensorBoard event files use it:
//
//	uint64  length       little-endian
//	uint32  masked CRC32C of the 8 length bytes
//	byte    data[length]
//	uint32  masked CRC32C of data
const (
	tfrecordHeaderLen = 12
	tfrecordFooterLen = 4
	// maxRecordLen refuses absurd lengths before allocating; real events are
	// kilobytes, a large image summary a few megabytes.
	maxRecordLen = 256 << 20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC32C is TFRecord's checksum: CRC32C rotated right by 15 bits plus
// a constant, so that a CRC computed over data that holds CRCs stays strong.
func maskedCRC32C(b []byte) uint32 {
	c := crc32.Checksum(b, crc32c)
	return (c>>15 | c<<17) + 0xa282ead8
}

// errTruncated is returned by recordReader.next when the input ends inside a
// record: the writer has not finished it yet.
var errTruncated = errors.New("truncated record")

// recordReader reads TFRecord records one after the other.
type recordReader struct {
	r       *bufio.Reader
	off     int64 // offset of the next record
	partial int64 // bytes of the truncated record, after errTruncated
	buf     []byte
}

// next returns the next record's data, valid until the next call; io.EOF at
// a clean end, errTruncated when the input stops inside a record, and an
// error wrapping ErrBadCRC when a checksum does not match.
func (rr *recordReader) next() ([]byte, error) {
	var hdr [tfrecordHeaderLen]byte
	n, err := io.ReadFull(rr.r, hdr[:])
	switch {
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		rr.partial = int64(n)
		return nil, errTruncated
	case err != nil:
		return nil, err
	}
	length := binary.LittleEndian.Uint64(hdr[:8])
	if binary.LittleEndian.Uint32(hdr[8:]) != maskedCRC32C(hdr[:8]) {
		return nil, fmt.Errorf("record length: %w", ErrBadCRC)
	}
	if length > maxRecordLen {
		return nil, fmt.Errorf("record length %d exceeds the limit of %d bytes", length, maxRecordLen)
	}
	// The body is read in steps of at most readChunk, growing the buffer
	// only as bytes arrive: a header claiming 256 MiB at the tail of a
	// growing file (or a corrupt one) costs what is there, not the claim.
	need := int(length) + tfrecordFooterLen
	body := rr.buf[:0]
	for len(body) < need {
		step := min(need-len(body), readChunk)
		body = slices.Grow(body, step)
		m, err := io.ReadFull(rr.r, body[len(body):len(body)+step])
		body = body[:len(body)+m]
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			rr.buf = body
			rr.partial = tfrecordHeaderLen + int64(len(body))
			return nil, errTruncated
		case err != nil:
			return nil, err
		}
	}
	rr.buf = body
	data := body[:length]
	if binary.LittleEndian.Uint32(body[length:]) != maskedCRC32C(data) {
		return nil, fmt.Errorf("record data: %w", ErrBadCRC)
	}
	rr.off += tfrecordHeaderLen + int64(need)
	return data, nil
}
