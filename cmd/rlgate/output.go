package main

import (
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

// jsonFlag is the --json flag every reporting command takes. Its output is
// a contract: fields are only ever added.
var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print the result as JSON"}

// emit prints a command's summary: as indented JSON with --json, else
// through text.
func emit(w io.Writer, asJSON bool, summary any, text func(io.Writer) error) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(summary)
	}
	return text(w)
}

// newTable returns a table writer with the house look. Every cell is
// printed through ledger.Printable: run ids, stage names and findings
// come from ledgers that may hold escape sequences.
func newTable(w io.Writer, header ...any) *tablewriter.Table {
	// Headers are printed as written: the default upper-cases them and
	// spaces out punctuation ("0.05" became "0 . 05").
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowFilter(tw.CellFilter{Global: printableCells}))
	t.Header(header...)
	return t
}

// termWidth is the terminal width the default tables fit.
const termWidth = 100

// preview puts s on one line and cuts it to at most n characters, ending a
// cut one with "…".
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// fitTable cuts column col of rows so that the table newTable draws from
// header and rows is at most termWidth characters wide.
func fitTable(header []string, rows [][]string, col int) {
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
	room := max(termWidth-used, utf8.RuneCountInString(header[col]), 8)
	for _, r := range rows {
		r[col] = preview(r[col], room)
	}
}

// printableCells is ledger.Printable over a table row.
func printableCells(cells []string) []string {
	for i, c := range cells {
		cells[i] = ledger.Printable(c)
	}
	return cells
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
