package manifests

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/rlgate/rlgate/ledger"
)

// MaxHeaderSize is the largest JSON header accepted, as in the reference
// implementation: a length beyond it is refused before anything is allocated.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key for the free-form string map.
const metadataKey = "__metadata__"

// TensorInfo is one tensor as the header declares it. Begin and End are the
// data_offsets, relative to the start of the data section.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
	Begin int64
	End   int64
}

// Len returns the tensor's byte length.
func (t TensorInfo) Len() int64 { return t.End - t.Begin }

// SafetensorsHeader is a parsed, validated header: its tensors, sorted by
// (Begin, End, Name), exactly tile the data section.
type SafetensorsHeader struct {
	Tensors  []TensorInfo
	Metadata map[string]string
}

// SafetensorsFile is an open safetensors file whose header has been read and
// validated; tensor bytes are read on demand through TensorReader.
type SafetensorsFile struct {
	SafetensorsHeader
	// Name is how errors refer to the file.
	Name string
	// Size is the file size in bytes.
	Size int64
	// DataStart is the file offset of the data section: 8 + header length.
	DataStart int64
	// HeaderDigest is the BLAKE3 of bytes [0, DataStart): the length prefix
	// and the header exactly as stored, padding included.
	HeaderDigest ledger.Digest

	f *os.File
}

// OpenSafetensors opens the file at path and reads and validates its header,
// reading none of the tensor data.
func OpenSafetensors(path string) (*SafetensorsFile, error) {
	return openSafetensors(path, path)
}

// openSafetensors is OpenSafetensors with the name errors use, so that a
// checkpoint's errors name a shard by its path inside the checkpoint.
func openSafetensors(path, name string) (*SafetensorsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open safetensors: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open safetensors: %w", err)
	}
	sf, err := readSafetensors(f, st.Size(), name)
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.f = f
	return sf, nil
}

// readSafetensors reads and validates the header of a file of the given size.
func readSafetensors(r io.ReaderAt, size int64, name string) (*SafetensorsFile, error) {
	fail := func(kind error, format string, args ...any) error {
		return &SafetensorsError{File: name, Detail: fmt.Sprintf(format, args...), Err: kind}
	}
	var prefix [8]byte
	if size < int64(len(prefix)) {
		return nil, fail(ErrTruncated, "file is %d bytes, shorter than the 8-byte header length", size)
	}
	if _, err := r.ReadAt(prefix[:], 0); err != nil {
		return nil, fmt.Errorf("read safetensors %s: %w", name, err)
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > MaxHeaderSize {
		return nil, fail(ErrHeaderTooLarge, "header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if n > uint64(size)-8 {
		return nil, fail(ErrTruncated, "header length %d runs past the end of the file (%d bytes)", n, size)
	}
	buf := make([]byte, 8+n)
	copy(buf, prefix[:])
	if _, err := r.ReadAt(buf[8:], 8); err != nil {
		return nil, fmt.Errorf("read safetensors %s: header: %w", name, err)
	}
	dataStart := int64(8 + n)
	h, err := ParseSafetensorsHeader(name, buf[8:], size-dataStart)
	if err != nil {
		return nil, err
	}
	return &SafetensorsFile{
		SafetensorsHeader: *h,
		Name:              name,
		Size:              size,
		DataStart:         dataStart,
		HeaderDigest:      ledger.Sum(buf),
	}, nil
}

// Close closes the underlying file.
func (f *SafetensorsFile) Close() error { return f.f.Close() }

// TensorReader returns a reader over the raw little-endian bytes of t, which
// must come from f's header.
func (f *SafetensorsFile) TensorReader(t TensorInfo) *io.SectionReader {
	return io.NewSectionReader(f.f, f.DataStart+t.Begin, t.Len())
}

// ParseSafetensorsHeader parses the JSON header of the file named file (the
// name only labels errors) whose data section is dataSize bytes long. It
// refuses duplicate keys, unknown dtypes, sizes that disagree with shape and
// dtype, and data_offsets that do not tile the data section exactly.
func ParseSafetensorsHeader(file string, header []byte, dataSize int64) (*SafetensorsHeader, error) {
	p := strictJSON{file: file}
	if !utf8.Valid(header) {
		return nil, p.fail("", ErrBadHeader, "header is not valid UTF-8")
	}
	// The reference implementation insists on '{' first; leading spaces would
	// also let two byte-different headers mean the same thing.
	if len(header) == 0 || header[0] != '{' {
		return nil, p.fail("", ErrBadHeader, "header does not start with '{'")
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	h := &SafetensorsHeader{}
	err := p.object(dec, "", "header", func(key string) error {
		if key == metadataKey {
			m, err := p.stringMap(dec, "", metadataKey)
			h.Metadata = m
			return err
		}
		t, err := p.tensorEntry(dec, key)
		if err != nil {
			return err
		}
		h.Tensors = append(h.Tensors, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, p.fail("", ErrBadHeader, "data after the header object")
	}
	if err := p.checkLayout(h.Tensors, dataSize); err != nil {
		return nil, err
	}
	return h, nil
}

// tensorEntry decodes {"dtype", "shape", "data_offsets"} for tensor name and
// checks that the byte length matches shape × dtype size. Unknown fields are
// skipped, as the reference implementation does; the file digest still
// covers them.
func (p strictJSON) tensorEntry(dec *json.Decoder, name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	var dtype *string
	var shape, offsets *[]uint64
	err := p.object(dec, name, "", func(key string) error {
		var v any
		switch key {
		case "dtype":
			v = &dtype
		case "shape":
			v = &shape
		case "data_offsets":
			v = &offsets
		default:
			v = new(json.RawMessage)
		}
		if err := dec.Decode(v); err != nil {
			return p.fail(name, ErrBadHeader, "%s: %v", key, err)
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	switch {
	case dtype == nil:
		return t, p.fail(name, ErrBadHeader, "dtype missing")
	case shape == nil:
		return t, p.fail(name, ErrBadHeader, "shape missing")
	case offsets == nil || len(*offsets) != 2:
		return t, p.fail(name, ErrBadHeader, "data_offsets must be [begin,end]")
	}
	t.DType = DType(*dtype)
	if !t.DType.Known() {
		return t, p.fail(name, ErrUnknownDType, "unknown dtype %q", *dtype)
	}
	begin, end := (*offsets)[0], (*offsets)[1]
	if begin > math.MaxInt64 || end > math.MaxInt64 {
		return t, p.fail(name, ErrBadOffsets, "data_offsets [%d,%d] out of range", begin, end)
	}
	if begin > end {
		return t, p.fail(name, ErrBadOffsets, "data_offsets [%d,%d] are reversed", begin, end)
	}
	t.Begin, t.End = int64(begin), int64(end)
	elems := uint64(1)
	t.Shape = make([]int64, len(*shape))
	overflow := false
	for i, d := range *shape {
		hi, lo := bits.Mul64(elems, d)
		overflow = overflow || hi != 0 || d > math.MaxInt64
		elems = lo
		t.Shape[i] = int64(d)
	}
	hi, nbytes := bits.Mul64(elems, uint64(t.DType.Size()))
	if overflow || hi != 0 || nbytes != end-begin {
		return t, p.fail(name, ErrSizeMismatch, "shape %v of %s needs %s bytes, data_offsets [%d,%d] hold %d",
			*shape, t.DType, byteCount(overflow || hi != 0, nbytes), begin, end, end-begin)
	}
	return t, nil
}

// byteCount prints a tensor's byte need, which may overflow 64 bits.
func byteCount(overflow bool, n uint64) string {
	if overflow {
		return "more than 2^64"
	}
	return fmt.Sprint(n)
}

// checkLayout sorts tensors by (Begin, End, Name) and checks that they tile
// [0, dataSize) with neither gap nor overlap: every data byte belongs to
// exactly one tensor, so the file digest covers every byte once.
func (p strictJSON) checkLayout(ts []TensorInfo, dataSize int64) error {
	slices.SortFunc(ts, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End), cmp.Compare(a.Name, b.Name))
	})
	var pos int64
	for i, t := range ts {
		switch {
		case t.End > dataSize:
			return p.fail(t.Name, ErrTruncated, "data_offsets [%d,%d] run past the end of the data section (%d bytes)", t.Begin, t.End, dataSize)
		case i > 0 && t.Begin < pos:
			return p.fail(t.Name, ErrBadOffsets, "data_offsets [%d,%d] overlap %q", t.Begin, t.End, ts[i-1].Name)
		case i > 0 && t.Begin > pos:
			return p.fail(t.Name, ErrBadOffsets, "data_offsets [%d,%d] leave a gap after %q, which ends at %d", t.Begin, t.End, ts[i-1].Name, pos)
		case i == 0 && t.Begin > 0:
			return p.fail(t.Name, ErrBadOffsets, "data_offsets [%d,%d] leave a gap at the start of the data section", t.Begin, t.End)
		}
		pos = t.End
	}
	if pos != dataSize {
		last := ""
		if len(ts) > 0 {
			last = ts[len(ts)-1].Name
		}
		return p.fail(last, ErrBadOffsets, "data section has %d bytes after the last tensor's data_offsets end at %d", dataSize-pos, pos)
	}
	return nil
}

// strictJSON walks JSON token by token so that a repeated key is an error
// rather than silently the last one wins; file and tensor label its errors.
type strictJSON struct{ file string }

func (p strictJSON) fail(tensor string, kind error, format string, args ...any) error {
	return &SafetensorsError{File: p.file, Tensor: tensor, Detail: fmt.Sprintf(format, args...), Err: kind}
}

// object reads one JSON object from dec and calls fn for each key with dec
// positioned at its value, which fn must consume. where, if not empty, names
// the object in errors.
func (p strictJSON) object(dec *json.Decoder, tensor, where string, fn func(key string) error) error {
	if err := p.delim(dec, tensor, '{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return p.fail(tensor, ErrBadHeader, "%v", err)
		}
		key := tok.(string) // inside an object, encoding/json yields only string keys
		if seen[key] {
			if where != "" {
				return p.fail(tensor, ErrDuplicateKey, "duplicate key %q in %s", key, where)
			}
			return p.fail(tensor, ErrDuplicateKey, "duplicate key %q", key)
		}
		seen[key] = true
		if err := fn(key); err != nil {
			return err
		}
	}
	return p.delim(dec, tensor, '}')
}

func (p strictJSON) delim(dec *json.Decoder, tensor string, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return p.fail(tensor, ErrBadHeader, "%v", err)
	}
	if tok != want {
		return p.fail(tensor, ErrBadHeader, "want %q, found %v", want, tok)
	}
	return nil
}

// stringMap reads an object of string values, refusing repeated keys. what
// names the object in errors.
func (p strictJSON) stringMap(dec *json.Decoder, tensor, what string) (map[string]string, error) {
	m := map[string]string{}
	err := p.object(dec, tensor, what, func(key string) error {
		var v *string
		if err := dec.Decode(&v); err != nil || v == nil {
			return p.fail(tensor, ErrBadHeader, "%s: value of %q is not a string", what, key)
		}
		m[key] = *v
		return nil
	})
	return m, err
}
