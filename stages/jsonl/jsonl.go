package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// WriteFile writes path whole or not at all: write fills a temporary file
// beside it, which is synced and renamed into place, so a reader never
// sees half a file and a failed write leaves any earlier file as it was.
func WriteFile(path string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
