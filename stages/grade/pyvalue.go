package grade

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// The official evaluators are Python: they compare the tuples Python's
// sqlite3 module returns, with Python's == and hash. This file gives each
// cell a key such that two cells have equal keys exactly when Python
// finds the values equal: 1 == 1.0, None == None, 'a' != b'a', and no
// string normalisation.

// pyKey is the Python-equality key of a cell.
func pyKey(c sqlenv.Cell) string {
	switch c.Kind {
	case sqlenv.KindInt:
		return "i" + strconv.FormatInt(c.Int, 10)
	case sqlenv.KindReal:
		// A float equals an int when it is integral and in int64 range
		// (Python compares int and float exactly).
		if f := c.Real; f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return "i" + strconv.FormatInt(int64(f), 10)
		}
		return "f" + strconv.FormatFloat(c.Real, 'g', -1, 64)
	case sqlenv.KindText:
		return "t" + c.Str
	case sqlenv.KindBlob:
		return "b" + c.Str
	}
	return "n"
}

// rowKey joins cell keys so that rows have equal keys exactly when they
// are equal tuples; key builds each cell's key.
func rowKey(row []sqlenv.Cell, key func(sqlenv.Cell) string) string {
	var b strings.Builder
	for _, c := range row {
		k := key(c)
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
	}
	return b.String()
}

// rowKeys returns the key of every row.
func rowKeys(rows [][]sqlenv.Cell, key func(sqlenv.Cell) string) []string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = rowKey(r, key)
	}
	return keys
}

// pyStrType is str(x) + str(type(x)), the sort key of the Spider
// evaluator's unorder_row.
func pyStrType(c sqlenv.Cell) string {
	switch c.Kind {
	case sqlenv.KindInt:
		return strconv.FormatInt(c.Int, 10) + "<class 'int'>"
	case sqlenv.KindReal:
		return sqlenv.FormatReal(c.Real) + "<class 'float'>"
	case sqlenv.KindText:
		return c.Str + "<class 'str'>"
	case sqlenv.KindBlob:
		return pyBytesRepr(c.Str) + "<class 'bytes'>"
	}
	return "None<class 'NoneType'>"
}

// pyBytesRepr is Python's repr of a bytes object: b'…', or b"…" when the
// bytes hold a single quote and no double quote.
func pyBytesRepr(b string) string {
	quote := byte('\'')
	if strings.IndexByte(b, '\'') >= 0 && strings.IndexByte(b, '"') < 0 {
		quote = '"'
	}
	var s strings.Builder
	s.WriteString("b")
	s.WriteByte(quote)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == quote || c == '\\':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == '\t':
			s.WriteString(`\t`)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\r':
			s.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			s.WriteString(`\x`)
			s.WriteString(strconv.FormatUint(uint64(c)|0x100, 16)[1:])
		default:
			s.WriteByte(c)
		}
	}
	s.WriteByte(quote)
	return s.String()
}

// decimalKey is the strict metric's key: numbers by exact decimal value
// (an integer, or the float's shortest repr read as a rational, so 1 and
// 1.0 agree and 0.1 is 1/10), text and blobs by bytes, NULL equal to NULL.
func decimalKey(c sqlenv.Cell) string {
	switch c.Kind {
	case sqlenv.KindInt:
		return "d" + strconv.FormatInt(c.Int, 10)
	case sqlenv.KindReal:
		if math.IsInf(c.Real, 0) || math.IsNaN(c.Real) {
			return "d" + sqlenv.FormatReal(c.Real)
		}
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(c.Real, 'g', -1, 64))
		return "d" + r.RatString()
	}
	return pyKey(c)
}
