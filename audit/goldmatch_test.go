package audit

import (
	"strings"
	"testing"
)

// TestGoldMatcherWindows checks the rolling-hash window search against a
// plain scan that looks every window up: each window of the gold, placed
// in other text, is found at its first occurrence, and text sharing only
// shorter runs with the gold is not.
func TestGoldMatcherWindows(t *testing.T) {
	gold := "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id"
	m := newGoldMatcher(gold, DefaultGoldSubstring)
	plain := func(text string) string {
		for i := 0; i+m.n <= len(text); i++ {
			if strings.Contains(m.whole, text[i:i+m.n]) {
				return text[i : i+m.n]
			}
		}
		return ""
	}
	var texts []string
	for i := 0; i+m.n <= len(m.whole); i++ {
		texts = append(texts, "question:"+m.whole[i:i+m.n]+"(again)", m.whole[i:i+m.n-1]+"~"+m.whole[i+1:])
	}
	texts = append(texts, strings.Repeat(m.whole[:m.n-1]+"|", 20), "", m.whole[:m.n-1])
	for _, text := range texts {
		want := plain(text)
		match, frag := m.findNormalized(text)
		if strings.Contains(text, m.whole) {
			continue // the whole gold, found before any window
		}
		if frag != want || (want != "") != (match == "fragment") {
			t.Errorf("in %q: found %q %q, a plain scan finds %q", text, match, frag, want)
		}
	}
}
