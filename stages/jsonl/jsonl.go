package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// maxLine is the longest line read; a rendered schema of a large database
// can run to megabytes.
const maxLine = 64 << 20

// Read decodes every non-blank line of path into a T. A line that is not
// clean text (CheckText) is refused; check, if not nil, sees each raw line
// next and can refuse it.
func Read[T any](path string, check func(raw []byte) error) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if err := checkLine(b); err != nil {
			return nil, fmt.Errorf("%s line %d%w", path, line, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if check != nil {
			if err := check(b); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", path, line, err)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Write encodes each value as one line, without HTML escaping.
func Write[T any](w io.Writer, vs []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
