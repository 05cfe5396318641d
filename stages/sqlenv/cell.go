package sqlenv

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Kind is the SQLite storage class of a result value
// (sqlite3_column_type), which is what comparators need: declared column
// types and affinities are not consulted after the value is produced.
type Kind uint8

// The five storage classes.
const (
	KindNull Kind = iota
	KindInt
	KindReal
	KindText
	KindBlob
)

var kindNames = [...]string{"null", "int", "real", "text", "blob"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Cell is one typed result value. Exactly one of Int, Real and Str is
// meaningful, chosen by Kind; Str holds a text value's bytes exactly as
// stored (not necessarily valid UTF-8) or a blob's bytes.
type Cell struct {
	Kind Kind
	Int  int64
	Real float64
	Str  string
}

// Null returns the NULL cell.
func Null() Cell { return Cell{Kind: KindNull} }

// Int returns an integer cell.
func Int(v int64) Cell { return Cell{Kind: KindInt, Int: v} }

// Real returns a floating-point cell.
func Real(v float64) Cell { return Cell{Kind: KindReal, Real: v} }

// Text returns a text cell.
func Text(s string) Cell { return Cell{Kind: KindText, Str: s} }

// Blob returns a blob cell.
func Blob(b []byte) Cell { return Cell{Kind: KindBlob, Str: string(b)} }

// String renders the value as observations show it: NULL, integers in
// decimal, reals as FormatReal, text as is, blobs as an X'…' literal.
func (c Cell) String() string {
	switch c.Kind {
	case KindInt:
		return strconv.FormatInt(c.Int, 10)
	case KindReal:
		return FormatReal(c.Real)
	case KindText:
		return c.Str
	case KindBlob:
		return "X'" + strings.ToUpper(hex.EncodeToString([]byte(c.Str))) + "'"
	}
	return "NULL"
}

// cellSize and rowSize are the memory a Cell and a row's slice header
// take in a Result, whatever they hold.
const (
	cellSize = int64(unsafe.Sizeof(Cell{}))
	rowSize  = int64(unsafe.Sizeof([]Cell(nil)))
)

// size is what a cell counts against Options.MaxBytes: the memory it
// takes, its struct and its text or blob bytes.
func (c Cell) size() int64 { return cellSize + int64(len(c.Str)) }

// FormatReal formats f as Python's repr(float) does: the shortest digits
// that read back to f, positional notation for decimal exponents in
// [-4, 16) with at least one fractional digit ("1.0", "0.0001"), otherwise
// scientific with a signed two-digit exponent ("1e+16", "1.5e-05"), and
// "inf", "-inf", "nan". Observations use it, and the spider comparator
// needs it because the official evaluator sorts values by str(value).
func FormatReal(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	// Shortest round-trip digits in the form [-]d[.ddd]e±XX.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expPart, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expPart)
	neg := strings.HasPrefix(mant, "-")
	digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)

	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if exp < -4 || exp >= 16 {
		b.WriteByte(digits[0])
		if len(digits) > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if exp < 0 {
			b.WriteByte('-')
			exp = -exp
		} else {
			b.WriteByte('+')
		}
		if exp < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.Itoa(exp))
		return b.String()
	}
	if exp < 0 {
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -exp-1))
		b.WriteString(digits)
		return b.String()
	}
	if len(digits) <= exp+1 {
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", exp+1-len(digits)))
		b.WriteString(".0")
		return b.String()
	}
	b.WriteString(digits[:exp+1])
	b.WriteByte('.')
	b.WriteString(digits[exp+1:])
	return b.String()
}
