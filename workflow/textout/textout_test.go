package textout

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPreview(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"a  b\n c", 10, "a b c"},
		{"abcdef", 6, "abcdef"},
		{"abcdef", 4, "abc…"},
		{"ééééé", 3, "éé…"},
	} {
		if got := Preview(tt.s, tt.n); got != tt.want {
			t.Errorf("Preview(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestSeqs(t *testing.T) {
	if got := Seqs([]int64{12, 40}); got != "#12 #40" {
		t.Errorf("Seqs = %q", got)
	}
	if got := Seqs([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); got != "#1 #2 #3 #4 #5 #6 #7 #8 +2 more" {
		t.Errorf("Seqs of 10 = %q", got)
	}
}

// TestFitTableFitsTheTerminal: a long cell is cut so that the table is at
// most TermWidth wide, and a control character in a cell is escaped.
func TestFitTableFitsTheTerminal(t *testing.T) {
	header := []string{"seq", "body"}
	rows := [][]string{{"1", strings.Repeat("x", 300)}, {"2", "bell\a"}}
	FitTable(header, rows, 1)
	var b bytes.Buffer
	tab := NewTable(&b, Cells(header)...)
	for _, r := range rows {
		tab.Append(Cells(r)...)
	}
	if err := tab.Render(); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > TermWidth {
			t.Errorf("a line of %d columns, want at most %d:\n%s", n, TermWidth, b.String())
		}
	}
	if strings.Contains(b.String(), "\a") {
		t.Errorf("a control character reached the table:\n%q", b.String())
	}
}
