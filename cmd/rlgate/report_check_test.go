package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/reports"
)

// reportNoGain: the report of a failed gate says so on the first line of
// every format and states no gain anywhere: no Δ, no "improve", and
// "gain" only where it says none is stated.
func reportNoGain(t *testing.T, dir string) {
	for _, f := range []string{"report.md", "report.html", "report.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		first := strings.SplitN(text, "\n", 2)[0]
		if f == "report.html" {
			first = reportFirstText(text)
		}
		if f == "report.json" {
			var r reports.Report
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			first = r.Headline
			if r.Supported || len(r.Unsupported) != 3 {
				t.Errorf("report.json: supported %v, unsupported %v", r.Supported, r.Unsupported)
			}
		}
		if want := "UNSUPPORTED: the gate failed 1 of 55 checks"; !strings.HasPrefix(first, want) || !strings.Contains(first, "rl > base, rl > noupdate, sft > base are unsupported") {
			t.Errorf("%s: first line %q, want it to start %q and name the claims", f, first, want)
		}
		if strings.Contains(text, "Δ") || strings.Contains(strings.ToLower(text), "improve") {
			t.Errorf("%s states a gain (Δ or improve)", f)
		}
		// rl > base passed its test, and the gate failed: it would pass,
		// and no claim reads supported.
		if f == "report.md" && (!strings.Contains(text, "| would pass (the gate failed) |") || strings.Contains(text, "| supported |")) {
			t.Errorf("%s: the claims under a failed gate are not shown as would pass / not supported:\n%s", f, text)
		}
		rest := strings.NewReplacer("states no gain", "", "no gain is stated", "").Replace(text)
		if regexp.MustCompile(`(?i)\bgains?\b`).MatchString(rest) {
			t.Errorf("%s says gain other than to state none", f)
		}
	}
}

// reportFirstText returns the first text a reader sees in an HTML page:
// the body's first paragraph.
func reportFirstText(page string) string {
	_, body, _ := strings.Cut(page, "<body>")
	m := regexp.MustCompile(`(?s)^\s*<p[^>]*>(.*?)</p>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.NewReplacer("&gt;", ">", "&lt;", "<", "&amp;", "&").Replace(m[1])
}

// reportUngated: on a ledger without a verdict, a report of named runs
// says no verdict covers them.
func reportUngated(t *testing.T, x *reportExperiment) {
	dir := reportWrite(t, x.ungated.ledger, "--runs", x.runs, "--train", x.cleanTrain)
	raw, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if first := strings.SplitN(string(raw), "\n", 2)[0]; !strings.HasPrefix(first, "UNSUPPORTED: no gate verdict covers these runs") {
		t.Errorf("first line %q", first)
	}
	reportNoGainWords(t, string(raw))
	// Without runs named there is nothing to report.
	code, _, errOut := rlgate(t, "--ledger", x.ungated.ledger, "report", "--out", filepath.Join(t.TempDir(), "r"))
	if code != exitError || !strings.Contains(errOut, "no gate verdict") || !strings.Contains(errOut, "Try:") {
		t.Errorf("no verdict, no runs: exit %d: %s", code, errOut)
	}
}

func reportNoGainWords(t *testing.T, text string) {
	t.Helper()
	if strings.Contains(text, "Δ") || strings.Contains(strings.ToLower(text), "improve") {
		t.Error("an unsupported report states a gain (Δ or improve)")
	}
}

// reportCopy copies a written report to a new directory.
func reportCopy(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// reportEdit replaces the first occurrence of old after the first line
// containing anchor in file, and returns that line's number.
func reportEdit(t *testing.T, dir, file, anchor, old, new string) int {
	t.Helper()
	p := filepath.Join(dir, file)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if strings.Contains(l, anchor) && strings.Contains(l, old) {
			lines[i] = strings.Replace(l, old, new, 1)
			if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			return i + 1
		}
	}
	t.Fatalf("%s: no line with %q and %q", file, anchor, old)
	return 0
}

// reportCheckEdits: a report edited by one digit, in any format, fails
// rlgate report --check with the file, line and both values; so do a
// missing and an extra file and a head the ledger does not have. A
// ledger that grew after the report still checks: the check reads it as
// of the report's head.
func reportCheckEdits(t *testing.T, x *reportExperiment, written string) {
	check := func(t *testing.T, dir string) (int, []reports.Difference) {
		t.Helper()
		code, out, errOut := rlgate(t, "--ledger", x.ledger, "report", "--check", dir, "--json")
		var s struct {
			Check reports.CheckResult `json:"check"`
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("check: exit %d: %v\n%s%s", code, err, out, errOut)
		}
		return code, s.Check.Differences
	}
	tests := []struct {
		name string
		edit func(t *testing.T, dir string) []reports.Difference
	}{
		{"one digit of an accuracy in report.md", func(t *testing.T, dir string) []reports.Difference {
			line := reportEdit(t, dir, "report.md", "| sft      | ev-sft.spider-greedy", "0.7500", "0.7600")
			return []reports.Difference{{File: "report.md", Line: line, Report: "0.7600", Ledger: "0.7500"}}
		}},
		{"one digit of a p-value in report.html", func(t *testing.T, dir string) []reports.Difference {
			line := reportEdit(t, dir, "report.html", "<td>rl &gt; base</td>", "1.863e-09", "1.864e-09")
			return []reports.Difference{{File: "report.html", Line: line, Report: "1.864e-09", Ledger: "1.863e-09"}}
		}},
		{"one digit of a count in report.json", func(t *testing.T, dir string) []reports.Difference {
			line := reportEdit(t, dir, "report.json", `"correct": 30`, "30", "31")
			return []reports.Difference{{File: "report.json", Line: line, Report: "31", Ledger: "30"}}
		}},
		{"a missing file", func(t *testing.T, dir string) []reports.Difference {
			if err := os.Remove(filepath.Join(dir, "report.html")); err != nil {
				t.Fatal(err)
			}
			return []reports.Difference{{File: "report.html", Report: "lacks this file", Ledger: "gives it"}}
		}},
		// Edits that change no value the tokens see: bytes decide.
		{"a claim reversed in report.md", func(t *testing.T, dir string) []reports.Difference {
			line := reportEdit(t, dir, "report.md", "| rl > base", "rl > base", "rl < base")
			return reportWholeLine(t, dir, "report.md", line, "rl < base", "rl > base")
		}},
		{"a boolean turned into a string in report.json", func(t *testing.T, dir string) []reports.Difference {
			line := reportEdit(t, dir, "report.json", `"supported": `, "false", `"false"`)
			return reportWholeLine(t, dir, "report.json", line, `"false"`, "false")
		}},
		{"markup turned into text in report.html", func(t *testing.T, dir string) []reports.Difference {
			line := reportEdit(t, dir, "report.html", `class="headline`, `unsupported">`, `unsupported" `)
			return reportWholeLine(t, dir, "report.html", line, `unsupported" `, `unsupported">`)
		}},
		{"an extra file", func(t *testing.T, dir string) []reports.Difference {
			gateWrite(t, filepath.Join(dir, "notes.txt"), "typed in by hand\n")
			return []reports.Difference{{File: "notes.txt", Report: "has this file", Ledger: "gives no such file"}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := reportCopy(t, written)
			want := tc.edit(t, dir)
			code, got := check(t, dir)
			if code != exitCheckFailed {
				t.Errorf("exit %d, want %d", code, exitCheckFailed)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a head the ledger does not have", func(t *testing.T) {
		dir := reportCopy(t, written)
		var r reports.Report
		raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		reportEdit(t, dir, "report.json", `"seq": `+jsonInt(r.Head.Seq), jsonInt(r.Head.Seq), jsonInt(r.Head.Seq-1))
		code, got := check(t, dir)
		if code != exitCheckFailed || len(got) != 1 || got[0].File != "report.json" || !strings.Contains(got[0].Ledger, "no such head") {
			t.Errorf("exit %d, differences %+v", code, got)
		}
	})
	t.Run("the ledger grew after the report", func(t *testing.T) {
		y := x.fork(t)
		dir := reportCopy(t, written)
		// A later verdict: the report's own (the latest at its head) is
		// no longer the latest, and the check must still find it.
		if code, v := y.gate(t, "--train", x.cleanTrain); code != exitOK || !v.OK {
			t.Fatalf("gate: exit %d, failed %v", code, failedChecks(v))
		}
		if code, out, errOut := rlgate(t, "--ledger", y.ledger, "report", "--check", dir); code != exitOK {
			t.Errorf("check: exit %d:\n%s%s", code, out, errOut)
		}
	})
}

func jsonInt(i int64) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// reportWholeLine is the difference report --check gives for a line whose
// values agree while its bytes do not: the whole line, as written and as
// the ledger gives it (edited back from new to old).
func reportWholeLine(t *testing.T, dir, file string, line int, new, old string) []reports.Difference {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(raw), "\n")[line-1]
	quote := func(s string) string { // as report --check shows a line
		if len(s) > 160 {
			s = s[:157] + "..."
		}
		return fmt.Sprintf("%q", s)
	}
	return []reports.Difference{{File: file, Line: line, Report: quote(got), Ledger: quote(strings.Replace(got, new, old, 1))}}
}
