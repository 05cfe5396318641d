package main

import (
	"encoding/json"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
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

// newTable returns a table writer with the house look.
func newTable(w io.Writer, header ...any) *tablewriter.Table {
	// Headers are printed as written: the default upper-cases them and
	// spaces out punctuation ("0.05" became "0 . 05").
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft))
	t.Header(header...)
	return t
}
