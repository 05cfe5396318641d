package spidersql

import (
	"regexp"
	"testing"
)

// The rules commaColon and dotRuns write out by hand, as nltk 3.8's
// NLTKWordTokenizer states them (\d as Python reads it: any Unicode
// decimal digit).
var (
	refComma    = regexp.MustCompile(`([:,])([^\p{Nd}])`)
	refCommaEnd = regexp.MustCompile(`([:,])$`)
	refDots     = regexp.MustCompile(`\.{2,}`)
)

// FuzzHandWrittenRules: the hand-written rules give what the regular
// expressions they replace give, on any text.
func FuzzHandWrittenRules(f *testing.F) {
	for _, g := range lines(f, spider+"/dev_gold.sql")[:100] {
		f.Add(g[0])
	}
	for _, s := range []string{"", ",", ":", ",,", "a,", "a,1", "a,\n", "x,٣", "x:é,", "...", "a..b.c....", ".", "a. ..", ",\xff", ":\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := commaColon(s), refCommaEnd.ReplaceAllString(refComma.ReplaceAllString(s, " $1 $2"), " $1 "); got != want {
			t.Errorf("commaColon(%q) = %q, want %q", s, got, want)
		}
		if got, want := dotRuns(s), refDots.ReplaceAllString(s, " $0 "); got != want {
			t.Errorf("dotRuns(%q) = %q, want %q", s, got, want)
		}
	})
}
