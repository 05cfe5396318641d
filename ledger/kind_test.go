package ledger

import (
	"regexp"
	"strings"
	"testing"
)

// validKind is kindRule, which errors quote, checked by hand.
func FuzzValidKind(f *testing.F) {
	re := regexp.MustCompile(kindRule)
	for _, k := range []string{"run.start", "outcomes", "a", "", "A", "1x", "a b", "a\n", strings.Repeat("a", 64), strings.Repeat("a", 65), "metrics-v2_x.y", "é"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := validKind(k), re.MatchString(k); got != want {
			t.Errorf("validKind(%q) = %v, %s says %v", k, got, kindRule, want)
		}
	})
}
