package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrText is returned when an input file is not clean text: invalid UTF-8
// (which encoding/json silently turns into U+FFFD) or a NUL byte (which no
// benchmark file holds, and which marks a truncated or padded copy).
var ErrText = errors.New("not clean UTF-8 text")

// CheckText refuses raw bytes that are not valid UTF-8 or hold a NUL byte,
// naming the line of the first defect. Readers call it before decoding, so
// a damaged file is refused rather than read with replaced characters.
func CheckText(raw []byte) error {
	line := 1
	for len(raw) > 0 {
		end := bytes.IndexByte(raw, '\n')
		cur := raw
		if end >= 0 {
			cur = raw[:end]
		}
		if err := checkLine(cur); err != nil {
			return fmt.Errorf("line %d%w", line, err)
		}
		if end < 0 {
			break
		}
		raw = raw[end+1:]
		line++
	}
	return nil
}

// checkLine is CheckText for one line; its error reads after "line N".
func checkLine(b []byte) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Errorf(" byte %d: NUL byte: %w", i+1, ErrText)
	}
	if !utf8.Valid(b) {
		return fmt.Errorf(": invalid UTF-8: %w", ErrText)
	}
	return nil
}
