package reports

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Markdown renders the report as Markdown: the headline first, then one
// table per section.
func (r *Report) Markdown() ([]byte, error) {
	var b bytes.Buffer
	// The headline names the policy and the claims, read from the ledger.
	fmt.Fprintf(&b, "%s\n\n# rlgate report\n", mdEscape(r.Headline))
	for _, s := range r.sections(mdEscape) {
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

// mdSignificant are the characters Markdown or the HTML it embeds would
// act on inside a line: raw HTML and entities (<, &), links and images
// ([, ]), code spans, emphasis and strike-through, and the escape itself.
// A table's pipes are mdCells' to escape; # and > act only at the start
// of a line, which no escaped string begins.
const mdSignificant = "\\`*_[]<&~"

// mdEscape puts s on one line and backslash-escapes every character of
// mdSignificant, so that a string from the ledger reads as its text. An
// underscore inside a word (concert_singer) never emphasises in
// CommonMark, so it is left as it is for the reader of the raw file.
func mdEscape(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	var b strings.Builder
	for i, c := range r {
		intraword := c == '_' && i > 0 && i < len(r)-1 && isWordRune(r[i-1]) && isWordRune(r[i+1])
		if strings.ContainsRune(mdSignificant, c) && !intraword {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

// mdCells puts each cell on one line and escapes the pipes a Markdown
// table cell cannot hold.
func mdCells(cells []string) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(strings.Join(strings.Fields(c), " "), "|", `\|`)
	}
	return out
}
