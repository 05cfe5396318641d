package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// CanonicalEncoder is a body that writes its own canonical JSON through a
// CanonicalWriter, which Append then stores as it is, instead of taking
// the generic route (encoding/json, then Canonicalize): a grading's
// outcomes batch of a thousand items spent more time there than in
// SQLite. The writer, not the encoder, answers for the output being
// canonical.
type CanonicalEncoder interface {
	EncodeCanonical(w *CanonicalWriter)
}

// CanonicalWriter writes one JSON value in the canonical form CanonicalJSON
// gives (RFC 8785), piece by piece, and checks as it goes what the form
// requires of its caller: each object's member names in strictly
// increasing UTF-16 order, a value after each name, finite numbers,
// integers a float64 holds exactly, containers closed. Strings are escaped
// as CanonicalJSON escapes them (bytes that are not UTF-8 become U+FFFD,
// as encoding/json makes them). The first mistake is kept and returned by
// Bytes; later calls write nothing.
type CanonicalWriter struct {
	buf   bytes.Buffer
	open  []canonLevel
	done  bool // the top-level value is complete
	named bool // a name was written and its value is due
	err   error
}

// canonLevel is one open container: an object (with the last name written
// in it) or an array, and how many members it has so far.
type canonLevel struct {
	object bool
	n      int
	last   string
}

// Reserve gives the writer room for size more bytes, so a body whose
// size the caller can estimate is written without growing, each growth
// being a copy into fresh memory, whose pages cost a fault each. Unlike
// bytes.Buffer.Grow, which clears all the room it adds, it leaves the room
// to the allocator, whose fresh memory needs no clearing.
func (w *CanonicalWriter) Reserve(size int) {
	if w.buf.Available() < size {
		b := make([]byte, w.buf.Len(), w.buf.Len()+size)
		copy(b, w.buf.Bytes())
		w.buf = *bytes.NewBuffer(b)
	}
}

var errCanonicalDone = errors.New("a value after the complete top-level value")

// value starts a value where one may go: at the top, after a name, or as
// an array element.
func (w *CanonicalWriter) value() bool {
	if w.err != nil {
		return false
	}
	if len(w.open) == 0 {
		if w.done {
			w.err = errCanonicalDone
			return false
		}
		return true
	}
	l := &w.open[len(w.open)-1]
	switch {
	case l.object && !w.named:
		w.err = errors.New("an object member without a name")
		return false
	case l.object:
		w.named = false
	case l.n > 0:
		w.buf.WriteByte(',')
	}
	l.n++
	return true
}

// ended marks the top-level value complete when no container is open.
func (w *CanonicalWriter) ended() {
	if len(w.open) == 0 {
		w.done = true
	}
}

// Object opens an object; End closes it.
func (w *CanonicalWriter) Object() {
	if w.value() {
		w.buf.WriteByte('{')
		w.open = append(w.open, canonLevel{object: true})
	}
}

// Array opens an array; End closes it.
func (w *CanonicalWriter) Array() {
	if w.value() {
		w.buf.WriteByte('[')
		w.open = append(w.open, canonLevel{})
	}
}

// End closes the innermost open object or array.
func (w *CanonicalWriter) End() {
	if w.err != nil {
		return
	}
	if len(w.open) == 0 || w.named {
		w.err = errors.New("End with no container open, or after a name without its value")
		return
	}
	l := w.open[len(w.open)-1]
	w.open = w.open[:len(w.open)-1]
	if l.object {
		w.buf.WriteByte('}')
	} else {
		w.buf.WriteByte(']')
	}
	w.ended()
}

// Name writes the name of the open object's next member, which must sort
// after the one before it.
func (w *CanonicalWriter) Name(name string) {
	if w.err != nil {
		return
	}
	if len(w.open) == 0 || !w.open[len(w.open)-1].object || w.named {
		w.err = fmt.Errorf("name %q outside an object, or after a name without its value", name)
		return
	}
	l := &w.open[len(w.open)-1]
	if l.n > 0 {
		if compareUTF16(l.last, name) >= 0 {
			w.err = fmt.Errorf("name %q after %q: names must be unique and in UTF-16 order", name, l.last)
			return
		}
		w.buf.WriteByte(',')
	}
	l.last = name
	writeCanonicalString(&w.buf, name)
	w.buf.WriteByte(':')
	w.named = true
}

// String writes a string.
func (w *CanonicalWriter) String(s string) {
	if w.value() {
		writeCanonicalString(&w.buf, s)
		w.ended()
	}
}

// Bool writes true or false.
func (w *CanonicalWriter) Bool(b bool) {
	if w.value() {
		w.buf.WriteString(strconv.FormatBool(b))
		w.ended()
	}
}

// Null writes null.
func (w *CanonicalWriter) Null() {
	if w.value() {
		w.buf.WriteString("null")
		w.ended()
	}
}

// Int writes an integer, which must come out of a float64 as written, as
// CanonicalJSON requires of an integer literal (the canonical form is the
// float64's ECMAScript spelling, so 2^53 + 1, or 2^60, whose shortest
// spelling ends in zeros, would otherwise change).
func (w *CanonicalWriter) Int(i int64) {
	if !w.value() {
		return
	}
	var lit, es [24]byte
	l := strconv.AppendInt(lit[:0], i, 10)
	if e := appendES6(es[:0], float64(i)); !bytes.Equal(l, e) {
		w.err = fmt.Errorf("integer %d is not exactly representable as a float64 (RFC 8785); store it as a string", i)
		return
	}
	w.buf.Write(l)
	w.ended()
}

// Float writes a finite float64 as ECMAScript prints it.
func (w *CanonicalWriter) Float(f float64) {
	if !w.value() {
		return
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.err = fmt.Errorf("number %v is not a finite float64", f)
		return
	}
	w.buf.Write(appendES6(w.buf.AvailableBuffer(), f))
	w.ended()
}

// Bytes returns the value written, or the first mistake.
func (w *CanonicalWriter) Bytes() ([]byte, error) {
	switch {
	case w.err != nil:
		return nil, fmt.Errorf("canonical json: %w", w.err)
	case !w.done:
		return nil, errors.New("canonical json: the value is incomplete")
	}
	return w.buf.Bytes(), nil
}
