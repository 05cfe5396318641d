package metrics

import (
	"errors"
	"fmt"
)

// ErrUnknownFormat is returned when a format name is not one of Formats, or
// when Detect finds neither a telling file name nor telling content.
var ErrUnknownFormat = errors.New("unknown metrics format")

// ErrAmbiguousFormat is returned when Detect finds content that reads as
// two formats, so that guessing could read the file wrongly.
var ErrAmbiguousFormat = errors.New("ambiguous metrics format")

// ErrBadCRC is returned when a TensorBoard record's checksum does not match
// its bytes somewhere before the end of the file: the file is corrupt, not
// merely still being written.
var ErrBadCRC = errors.New("tfrecord checksum mismatch")

// ErrNoStep is returned when a JSON record carries no usable step value, so
// its values cannot be placed on the training curve.
var ErrNoStep = errors.New("record has no step")

// ErrRewound is returned when a file holds less than a saved Cursor already
// consumed: it was truncated or replaced since, and resuming would skip or
// repeat data.
var ErrRewound = errors.New("file is shorter than the saved cursor")

// ParseError locates a failure in a metrics file: by line (and column, for
// JSON syntax) in text formats, by byte offset in TensorBoard files.
type ParseError struct {
	Path   string
	Line   int64 // 1-based; 0 when the format has no lines
	Column int64 // 1-based; 0 when unknown
	Offset int64 // byte offset of the record or token at fault
	Err    error
}

func (e *ParseError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("parse metrics %s:%d:%d: %v", e.Path, e.Line, e.Column, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("parse metrics %s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("parse metrics %s at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }
