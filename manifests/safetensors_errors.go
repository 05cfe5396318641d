package manifests

import (
	"errors"
	"strconv"
)

// Sentinel errors of the safetensors reader and the checkpoint layer. Test
// with errors.Is; the message of the wrapping *SafetensorsError names the
// file and the tensor.
var (
	// ErrTruncated is returned when a file is shorter than its header says.
	ErrTruncated = errors.New("truncated")
	// ErrHeaderTooLarge is returned when the declared header length exceeds
	// MaxHeaderSize, which a reader must refuse before allocating it.
	ErrHeaderTooLarge = errors.New("header too large")
	// ErrBadHeader is returned when the header is not the JSON object the
	// format requires (syntax, types, invalid UTF-8).
	ErrBadHeader = errors.New("malformed header")
	// ErrDuplicateKey is returned when a JSON object in a header or an index
	// repeats a key; encoding/json would silently keep the last one.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrUnknownDType is returned for a dtype outside the dtype table.
	ErrUnknownDType = errors.New("unknown dtype")
	// ErrSizeMismatch is returned when shape × dtype size differs from the
	// tensor's byte length.
	ErrSizeMismatch = errors.New("size mismatch")
	// ErrBadOffsets is returned when data_offsets are reversed, overlap, leave
	// a gap, or leave bytes of the data section unclaimed.
	ErrBadOffsets = errors.New("bad data_offsets")
	// ErrBadIndex is returned when a sharded checkpoint's index disagrees with
	// its shards: a missing shard, a tensor listed but absent or found twice,
	// a tensor present but not listed.
	ErrBadIndex = errors.New("index mismatch")
	// ErrDuplicateTensor is returned when two files of a checkpoint without
	// an index both hold a tensor of the same name.
	ErrDuplicateTensor = errors.New("duplicate tensor")
	// ErrNoSafetensors is returned when a checkpoint holds no safetensors
	// file, so it has no tensors and no model identity.
	ErrNoSafetensors = errors.New("no safetensors file")
	// ErrTensorMismatch is returned by DiffCheckpoints when the two
	// checkpoints do not hold the same tensor names, dtypes and shapes.
	ErrTensorMismatch = errors.New("tensors do not match")
)

// SafetensorsError locates a defect in a safetensors file or checkpoint: the
// file, the tensor when one is to blame, and what is wrong. Err is one of the
// sentinels above.
type SafetensorsError struct {
	File   string
	Tensor string // empty when the defect is not one tensor's
	Detail string
	Err    error
}

func (e *SafetensorsError) Error() string {
	s := "safetensors " + e.File + ": "
	if e.Tensor != "" {
		s += "tensor " + strconv.Quote(e.Tensor) + ": "
	}
	return s + e.Detail
}

func (e *SafetensorsError) Unwrap() error { return e.Err }
