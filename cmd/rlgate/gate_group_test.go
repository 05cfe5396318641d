package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
)

// gateGroupClaims gates a fork of TestGate's experiment under a policy
// whose claims name Spider hardness groups: each is tested on its group's
// tasks (as the official hardness file puts the 40 evaluated dev
// questions), so "rl > base" passes while "rl > base on extra" (two
// tasks) fails; a group the evaluations hold no task of fails its claim
// naming the group, and an unknown group is refused with the policy. The
// group shows in the verdict, the text table, the JUnit names and the
// report's claims table, and the report's re-derivation reproduces it.
func gateGroupClaims(t *testing.T, x *gateExperiment) {
	// What each claim must see: the official hardness of the 40 tasks,
	// base solving every fourth (gateExperiment), rl all of them.
	raw, err := os.ReadFile("../../testdata/spider/dev_hardness.official.tsv")
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		OK          bool
		Tasks, B, C int
	}
	wants := map[string]*want{"rl > base": {OK: true}, "rl > base on hard+extra": {OK: true}, "rl > base on extra": {}, "rl > base on challenging": {}}
	for _, line := range strings.Split(string(raw), "\n")[1 : gateTasks+1] {
		f := strings.Split(line, "\t")
		i, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatal(err)
		}
		for claim, w := range wants {
			_, group, _ := strings.Cut(claim, " on ")
			if group == "" || strings.Contains("+"+group+"+", "+"+f[2]+"+") {
				w.Tasks++
				if i%4 != 0 {
					w.B++
				}
			}
		}
	}

	dir := t.TempDir()
	policy := filepath.Join(dir, "by-hardness.yaml")
	gateWrite(t, policy, "name: by-hardness\nclaims: [\"rl > base\", \"rl > base on extra+hard\", \"rl > base on extra\", \"rl > base on challenging\"]\naudits: [training]\n"+x.policySubjects())
	junit := filepath.Join(dir, "gate.xml")
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "gate", "--policy", policy, "--junit", junit, "--json")
	var v audit.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitCheckFailed {
		t.Fatalf("gate: exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	got := map[string]*want{}
	groups := map[string]audit.Group{}
	for _, c := range v.Claims {
		got[c.Claim] = &want{c.OK, c.Tasks, c.B, c.C}
		groups[c.Claim] = c.Group
	}
	if diff := cmp.Diff(wants, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]audit.Group{"rl > base": "", "rl > base on hard+extra": "hard+extra", "rl > base on extra": "extra", "rl > base on challenging": "challenging"}, groups); diff != "" {
		t.Errorf("groups recorded (-want +got):\n%s", diff)
	}
	for _, c := range v.Checks {
		if c.Name == "claim rl > base on challenging" && !strings.Contains(c.Message, "group challenging: no task of the evaluations is challenging (their gradings recorded easy ") {
			t.Errorf("empty group: %q", c.Message)
		}
	}
	xml, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`name="claim rl &gt; base on hard+extra"`, `name="claim rl &gt; base on extra"`} {
		if !strings.Contains(string(xml), name) {
			t.Errorf("junit has no test case %s:\n%s", name, xml)
		}
	}
	code, out, _ = rlgate(t, "--ledger", x.ledger, "gate", "--policy", policy, "--dry-run")
	if code != exitCheckFailed || !strings.Contains(out, "claim rl > base on hard+extra") {
		t.Errorf("text: exit %d:\n%s", code, out)
	}

	// The report re-derives the verdict and names the groups in its
	// claims table.
	report := reportWrite(t, x.ledger)
	md, err := os.ReadFile(filepath.Join(report, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, claim := range []string{"| rl > base on hard+extra ", "| rl > base on extra "} {
		if !strings.Contains(string(md), claim) {
			t.Errorf("report.md has no claims row %s:\n%s", claim, md)
		}
	}
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "report", "--check", report); code != exitOK {
		t.Errorf("report --check: exit %d:\n%s%s", code, out, errOut)
	}

	unknown := filepath.Join(dir, "unknown.yaml")
	gateWrite(t, unknown, "claims: [\"rl > base on hardest\"]\naudits: [training]\n"+x.policySubjects())
	code, out, errOut = rlgate(t, "--ledger", x.ledger, "gate", "--policy", unknown)
	wantErr := "rlgate: --policy: policy " + unknown + `:1: claims: claim "rl > base on hardest": unknown group "hardest": want difficulty levels joined by +, each one of simple, moderate, challenging, easy, medium, hard, extra (see rlgate help)` + "\n"
	if code != exitUsage || out != "" || errOut != wantErr {
		t.Errorf("unknown group: exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errOut, wantErr)
	}
}
