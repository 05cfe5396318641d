package sqlenv

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ObservationFormat names the observation layout below. It is part of the
// evaluation protocol, which is hashed: change it with the layout.
const ObservationFormat = "rlgate.observation/1"

// ObservationOptions bound an observation's size.
type ObservationOptions struct {
	MaxRows      int // rows shown; default 50
	MaxCellRunes int // characters shown of one value; default 200
}

func (o ObservationOptions) withDefaults() ObservationOptions {
	if o.MaxRows <= 0 {
		o.MaxRows = 50
	}
	if o.MaxCellRunes <= 0 {
		o.MaxCellRunes = 200
	}
	return o
}

// RenderObservation turns the outcome of Execute into the text the policy
// reads after an <sql> turn. The layout (ObservationFormat) is:
//
//	STATUS: OK
//	ROW_COUNT: 3
//	COLUMNS: name | age
//	Kacey | 6
//	Hipolito | NULL
//	... 1 more row not shown
//
// ROW_COUNT is the number of rows the query returned, followed by "+" when
// the executor's caps stopped reading. Values are rendered by Cell.String
// and separated by " | "; inside names and values a backslash, "|",
// newline, carriage return and tab are escaped as \\, \|, \n, \r, \t, and a
// value longer than MaxCellRunes is cut and ends in "...". A byte that is
// not UTF-8 is shown as \xHH. On error:
//
//	STATUS: ERROR
//	ERROR: no such column: agee
//
// The message is SQLite's own, or a fixed sentence for the executor's
// refusals; it never contains a host path. The text ends without a newline
// and depends only on its inputs.
func RenderObservation(res *Result, err error, o ObservationOptions) string {
	o = o.withDefaults()
	var b strings.Builder
	if err != nil {
		b.WriteString("STATUS: ERROR\nERROR: ")
		b.WriteString(escapeValue(errorMessage(err), 4*o.MaxCellRunes))
		return b.String()
	}
	b.WriteString("STATUS: OK\nROW_COUNT: ")
	b.WriteString(strconv.Itoa(len(res.Rows)))
	if res.Truncated {
		b.WriteByte('+')
	}
	b.WriteString("\nCOLUMNS: ")
	for i, c := range res.Columns {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(escapeValue(c, o.MaxCellRunes))
	}
	shown := min(len(res.Rows), o.MaxRows)
	for _, row := range res.Rows[:shown] {
		b.WriteByte('\n')
		for i, c := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(escapeValue(c.String(), o.MaxCellRunes))
		}
	}
	if rest := len(res.Rows) - shown; rest > 0 {
		b.WriteString("\n... ")
		b.WriteString(strconv.Itoa(rest))
		if rest == 1 {
			b.WriteString(" more row not shown")
		} else {
			b.WriteString(" more rows not shown")
		}
	}
	return b.String()
}

// errorMessage is the policy-facing sentence for err.
func errorMessage(err error) string {
	var se *SQLError
	var te *TimeoutError
	switch {
	case errors.As(err, &se):
		return se.Msg
	case errors.As(err, &te):
		return te.Error()
	case errors.Is(err, ErrEmptyStatement):
		return "empty query: write one SELECT statement"
	case errors.Is(err, ErrMultipleStatements):
		return "only one statement per query is allowed"
	case errors.Is(err, ErrNotReadOnly):
		return "only read-only queries are allowed"
	case errors.Is(err, ErrNULByte):
		return "query contains a NUL character"
	}
	return "the query could not be executed"
}

// escapeValue escapes the separators of the layout and cuts s to max runes.
func escapeValue(s string, max int) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n == max {
			b.WriteString("...")
			break
		}
		n++
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '|':
			b.WriteString(`\|`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r == utf8.RuneError && !validRuneAt(s, i) {
				b.WriteString(`\x`)
				b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// validRuneAt reports whether a real U+FFFD is encoded at s[i], as opposed
// to an invalid byte that range decoding reports as RuneError.
func validRuneAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 3
}
