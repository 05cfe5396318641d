package manifests

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// TensorSource is one tensor for WriteSafetensors: its header fields and a
// reader of exactly its raw little-endian bytes, so that tensors larger than
// memory stream through.
type TensorSource struct {
	Name  string
	DType DType
	Shape []int64
	Data  io.Reader
}

// WriteSafetensors writes a safetensors file holding tensors in the order
// given. The header has sorted keys and is padded with spaces to a multiple
// of 8 bytes, as the reference implementation writes it, so that the data
// section starts aligned.
func WriteSafetensors(w io.Writer, metadata map[string]string, tensors []TensorSource) error {
	type entry struct {
		DType       DType    `json:"dtype"`
		Shape       []int64  `json:"shape"`
		DataOffsets [2]int64 `json:"data_offsets"`
	}
	header := map[string]any{}
	if metadata != nil {
		header[metadataKey] = metadata
	}
	sizes := make([]int64, len(tensors))
	var off int64
	for i, t := range tensors {
		n, err := sourceSize(t)
		if err != nil {
			return fmt.Errorf("write safetensors: tensor %q: %w", t.Name, err)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("write safetensors: tensor %q: %w", t.Name, ErrDuplicateKey)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{} // a scalar: [] rather than null
		}
		header[t.Name] = entry{t.DType, shape, [2]int64{off, off + n}}
		sizes[i] = n
		off += n
	}
	var buf bytes.Buffer
	buf.Write(make([]byte, 8))
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(header); err != nil {
		return fmt.Errorf("write safetensors: header: %w", err)
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	binary.LittleEndian.PutUint64(buf.Bytes(), uint64(buf.Len()-8))
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write safetensors: %w", err)
	}
	for i, t := range tensors {
		n, err := io.CopyN(w, t.Data, sizes[i])
		if err != nil {
			return fmt.Errorf("write safetensors: tensor %q: wrote %d of %d bytes: %w", t.Name, n, sizes[i], err)
		}
	}
	return nil
}

// sourceSize checks t's name, dtype and shape and returns its byte length.
func sourceSize(t TensorSource) (int64, error) {
	if t.Name == metadataKey {
		return 0, errors.New("name is reserved")
	}
	if !t.DType.Known() {
		return 0, fmt.Errorf("%w %q", ErrUnknownDType, t.DType)
	}
	n := uint64(t.DType.Size())
	for _, d := range t.Shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if d < 0 || hi != 0 || lo > 1<<62 {
			return 0, fmt.Errorf("%w: shape %v", ErrSizeMismatch, t.Shape)
		}
		n = lo
	}
	return int64(n), nil
}
