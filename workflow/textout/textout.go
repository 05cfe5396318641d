// Package textout is the house look of what rlgate prints for a person:
// tables, one-line previews and the cells every table of checks shares. It
// sits on the workflow floor so that each workflow package can write its
// own result's text (a method or function beside the result) and the
// command line only chooses between that text and --json.
package textout

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rlgate/rlgate/ledger"
)

// Emit prints a command's summary: as indented JSON when asJSON, else
// through text. The JSON is a contract: fields are only ever added.
func Emit(w io.Writer, asJSON bool, summary any, text func(io.Writer) error) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(summary)
	}
	return text(w)
}

// NewTable returns a table writer with the house look. Every cell is
// printed through ledger.Printable: run ids, stage names and findings
// come from ledgers that may hold escape sequences.
func NewTable(w io.Writer, header ...any) *tablewriter.Table {
	// Headers are printed as written: the default upper-cases them and
	// spaces out punctuation ("0.05" became "0 . 05").
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowFilter(tw.CellFilter{Global: printableCells}))
	t.Header(header...)
	return t
}

// TermWidth is the terminal width the default tables fit.
const TermWidth = 100

// Preview puts s on one line and cuts it to at most n characters, ending a
// cut one with "…".
func Preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// FitTable cuts column col of rows so that the table NewTable draws from
// header and rows is at most TermWidth characters wide.
func FitTable(header []string, rows [][]string, col int) {
	used := 3*len(header) + 1 // borders and padding
	for c := range header {
		if c == col {
			continue
		}
		w := utf8.RuneCountInString(header[c])
		for _, r := range rows {
			w = max(w, utf8.RuneCountInString(r[c]))
		}
		used += w
	}
	room := max(TermWidth-used, utf8.RuneCountInString(header[col]), 8)
	for _, r := range rows {
		r[col] = Preview(r[col], room)
	}
}

// printableCells is ledger.Printable over a table row.
func printableCells(cells []string) []string {
	for i, c := range cells {
		cells[i] = ledger.Printable(c)
	}
	return cells
}

// Cells is ss as the cells Table.Header and Table.Append take.
func Cells(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// PassFail is a check's result cell.
func PassFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// Seqs prints evidence seqs as "#12 #40", at most 8 of them.
func Seqs(seqs []int64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i == 8 {
			fmt.Fprintf(&b, " +%d more", len(seqs)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "#%d", s)
	}
	return b.String()
}
