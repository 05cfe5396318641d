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

// ObservationTable is an observation read back into its parts
// (ParseObservation), for a reader that shows it as a table: the values
// unescaped, a value RenderObservation cut still ending in "...".
type ObservationTable struct {
	OK bool `json:"ok"`
	// Error is the message of a STATUS: ERROR observation.
	Error string `json:"error,omitempty"`
	// RowCount is ROW_COUNT as written: the rows the query returned,
	// ending in "+" when the executor's caps stopped reading.
	RowCount string     `json:"row_count,omitempty"`
	Columns  []string   `json:"columns,omitempty"`
	Rows     [][]string `json:"rows,omitempty"`
	// NotShown is the number of rows the observation said it left out.
	NotShown int `json:"not_shown,omitempty"`
}

// ParseObservation reads an observation that RenderObservation wrote with
// options o (ObservationFormat) and reports false for any other text,
// which a reader then shows as it is. The options tell the note of rows
// left out from a row that reads like one: the note follows exactly
// o.MaxRows rows.
func ParseObservation(text string, o ObservationOptions) (*ObservationTable, bool) {
	o = o.withDefaults()
	lines := strings.Split(text, "\n")
	switch {
	case len(lines) == 2 && lines[0] == "STATUS: ERROR" && strings.HasPrefix(lines[1], "ERROR: "):
		msg, ok := unescapeValue(lines[1][len("ERROR: "):])
		return &ObservationTable{Error: msg}, ok
	case len(lines) < 3 || lines[0] != "STATUS: OK" || !strings.HasPrefix(lines[1], "ROW_COUNT: ") || !strings.HasPrefix(lines[2], "COLUMNS: "):
		return nil, false
	}
	t := &ObservationTable{OK: true, RowCount: lines[1][len("ROW_COUNT: "):]}
	count, err := strconv.Atoi(strings.TrimSuffix(t.RowCount, "+"))
	if err != nil || count < 0 {
		return nil, false
	}
	var ok bool
	if t.Columns, ok = splitRow(lines[2][len("COLUMNS: "):]); !ok {
		return nil, false
	}
	rows := lines[3:]
	// The note of rows left out follows MaxRows rows and counts the rest;
	// a last line that reads like it anywhere else is a row.
	if rest := count - o.MaxRows; rest > 0 && len(rows) == o.MaxRows+1 {
		word := " more rows not shown"
		if rest == 1 {
			word = " more row not shown"
		}
		if rows[o.MaxRows] != "... "+strconv.Itoa(rest)+word {
			return nil, false
		}
		t.NotShown, rows = rest, rows[:o.MaxRows]
	}
	if len(rows) != min(count, o.MaxRows) {
		return nil, false
	}
	for _, line := range rows {
		row, ok := splitRow(line)
		if !ok || len(row) != len(t.Columns) {
			return nil, false
		}
		t.Rows = append(t.Rows, row)
	}
	return t, true
}

// splitRow splits a line of values at its unescaped " | " separators and
// unescapes each value.
func splitRow(line string) ([]string, bool) {
	var out []string
	start := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			if i < 1 || line[i-1] != ' ' || i+1 >= len(line) || line[i+1] != ' ' || i-1 < start {
				return nil, false
			}
			v, ok := unescapeValue(line[start : i-1])
			if !ok {
				return nil, false
			}
			out = append(out, v)
			start = i + 2
			i++
		}
	}
	v, ok := unescapeValue(line[start:])
	return append(out, v), ok
}

// unescapeValue undoes escapeValue: \\, \|, \n, \r, \t and \xHH.
func unescapeValue(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, !strings.Contains(s, "|")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '|' {
			return "", false
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return "", false
		}
		i++
		switch s[i] {
		case '\\', '|':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			if i+2 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}
