package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
)

// maxLine is the longest line read; a rendered schema of a large database
// can run to megabytes.
const maxLine = 64 << 20

// Read decodes every non-blank line of path into a T. A line that is not
// clean text (CheckText) is refused; check, if not nil, sees each raw line
// next and can refuse it; a line must hold one JSON value and nothing
// after it. Lines are decoded on every core, in batches (a file of
// trajectories runs to hundreds of megabytes), so check may be called
// concurrently; the error reported is the one of the first bad line, as a
// sequential read would report it.
func Read[T any](path string, check func(raw []byte) error) ([]T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse[T](path, data, check)
}

// Parse decodes data as Read decodes a file's bytes; name is what its
// errors call the data (a path, or where the bytes were read from).
func Parse[T any](name string, data []byte, check func(raw []byte) error) ([]T, error) {
	return ParseFast[T](name, data, check, nil)
}

// ParseFast is Parse with fast, a reader of the one layout the writer of
// such lines gives them, tried on each line first: it fills *v and
// reports true, or reports false, with *v untouched, for anything else,
// which encoding/json then reads. It must take only lines encoding/json
// reads to the same value (each one has a fuzz target that checks it):
// reflection made encoding/json most of the time of reading a small file
// such as a gold file.
func ParseFast[T any](name string, data []byte, check func(raw []byte) error, fast func(line []byte, v *T) bool) ([]T, error) {
	type line struct{ n, start, end int }
	var lines []line
	for n, start := 1, 0; start < len(data); n++ {
		end := len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end = start + i
		}
		if end-start > maxLine {
			return nil, fmt.Errorf("%s line %d: %w", name, n, bufio.ErrTooLong)
		}
		if len(bytes.TrimSpace(data[start:end])) > 0 {
			lines = append(lines, line{n, start, end})
		}
		start = end + 1
	}
	out := make([]T, len(lines))
	const batch = 256
	errs := make([]error, (len(lines)+batch-1)/batch)
	err := ledger.ForEach(context.Background(), len(errs), func(_ context.Context, k int) error {
		first, last := k*batch, min((k+1)*batch, len(lines))-1
		// One decoder reads the lines fast does not take as a stream from
		// the first of them to the batch's end; each value must end on the
		// line it began on. A line fast takes ends the stream.
		var dec *json.Decoder
		base := 0 // where dec's stream starts in data
		for i := first; i <= last; i++ {
			l := lines[i]
			b := bytes.TrimSuffix(data[l.start:l.end], []byte{'\r'}) // as bufio.ScanLines reads a line
			if err := checkLine(b); err != nil {
				errs[k] = fmt.Errorf("%s line %d%w", name, l.n, err)
				return nil
			}
			if check != nil {
				if err := check(b); err != nil {
					errs[k] = fmt.Errorf("%s line %d: %w", name, l.n, err)
					return nil
				}
			}
			if fast != nil && fast(b, &out[i]) {
				dec = nil
				continue
			}
			if dec == nil {
				base = l.start
				dec = json.NewDecoder(bytes.NewReader(data[base:lines[last].end]))
				dec.DisallowUnknownFields()
			}
			err := dec.Decode(&out[i])
			if end := base + int(dec.InputOffset()); err == nil && (end < l.start || end > l.end) {
				err = fmt.Errorf("the value does not end on its line")
			} else if err == nil && len(bytes.TrimSpace(data[end:l.end])) > 0 {
				err = fmt.Errorf("more than one JSON value on the line")
			}
			if err != nil {
				errs[k] = fmt.Errorf("%s line %d: %w", name, l.n, err)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
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
