package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportEscapes: a policy's name is read from the ledger and may hold
// HTML and table pipes; report.md shows it as text (escaped, as
// report.html does), every table row keeps its cells, and report --check
// still passes on the report.
func reportEscapes(t *testing.T, x *reportExperiment) {
	const evil = "<script>alert(1)</script>|x"
	y := x.fork(t)
	policy := filepath.Join(t.TempDir(), "evil.yaml")
	gateWrite(t, policy, "name: \""+evil+"\"\nclaims: [\"rl > base\"]\n"+y.policySubjects())
	if code, out, errOut := rlgate(t, "--ledger", y.ledger, "gate", "--policy", policy, "--self-grade-sample", "40"); code != exitOK && code != exitCheckFailed {
		t.Fatalf("gate: exit %d:\n%s%s", code, out, errOut)
	}
	// Labels are plain identifiers (audit.CheckLabel): one with markup is
	// refused before anything is read.
	if code, _, errOut := rlgate(t, "--ledger", x.ungated.ledger, "report", "--out", t.TempDir(), "--runs", strings.Replace(x.runs, "sft=", evil+"=", 1)); code != exitUsage {
		t.Errorf("a label with markup: exit %d: %s", code, errOut)
	}
	for name, c := range map[string]struct{ ledger, dir string }{
		"policy name": {y.ledger, reportWrite(t, y.ledger)},
	} {
		t.Run(name, func(t *testing.T) {
			md, err := os.ReadFile(filepath.Join(c.dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(md)
			if n := strings.Count(text, `\<script>alert(1)\</script>`); n == 0 || n != strings.Count(text, "<script>") {
				t.Errorf("report.md holds <script> %d times, escaped %d times:\n%s", strings.Count(text, "<script>"), n, text)
			}
			var cells int
			for i, line := range strings.Split(text, "\n") {
				if !strings.HasPrefix(line, "|") {
					cells = 0
					continue
				}
				if n := mdUnescapedPipes(line); cells == 0 {
					cells = n
				} else if n != cells {
					t.Errorf("report.md:%d has %d cell borders, its table %d: %s", i+1, n, cells, line)
				}
			}
			html, err := os.ReadFile(filepath.Join(c.dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(html), "<script>alert") || !strings.Contains(string(html), "&lt;script&gt;alert(1)") {
				t.Error("report.html does not escape the ledger's <script>")
			}
			if code, out, errOut := rlgate(t, "--ledger", c.ledger, "report", "--check", c.dir); code != exitOK {
				t.Errorf("check: exit %d:\n%s%s", code, out, errOut)
			}
		})
	}
}

// mdUnescapedPipes counts the pipes of a Markdown table line that border
// cells: those not escaped by a backslash (itself not escaped).
func mdUnescapedPipes(line string) int {
	n, backslashes := 0, 0
	for _, c := range line {
		switch {
		case c == '\\':
			backslashes++
			continue
		case c == '|' && backslashes%2 == 0:
			n++
		}
		backslashes = 0
	}
	return n
}
