package reports

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Markdown renders the report as Markdown: the headline first, then one
// table per section.
func (r *Report) Markdown() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n# rlgate report\n", r.Headline)
	for _, s := range r.sections() {
		fmt.Fprintf(&b, "\n## %s\n\n", s.Title)
		if s.Intro != "" {
			fmt.Fprintf(&b, "%s\n\n", s.Intro)
		}
		if s.Header != nil {
			t := tablewriter.NewTable(&b, tablewriter.WithRenderer(renderer.NewMarkdown()),
				tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
				tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone), tablewriter.WithRowAlignment(tw.AlignLeft))
			t.Header(mdCells(s.Header)...)
			for _, row := range s.Rows {
				if err := t.Append(mdCells(row)...); err != nil {
					return nil, err
				}
			}
			if err := t.Render(); err != nil {
				return nil, fmt.Errorf("render %s table: %w", s.ID, err)
			}
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "\n%s\n", n)
		}
	}
	return b.Bytes(), nil
}

// mdCells puts each cell on one line and escapes the pipes a Markdown
// table cell cannot hold.
func mdCells(cells []string) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(strings.Join(strings.Fields(c), " "), "|", `\|`)
	}
	return out
}
