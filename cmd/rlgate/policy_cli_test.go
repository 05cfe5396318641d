package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// gatePolicyFlags runs the gate on a fork of TestGate's experiment with
// what a user or an attacker hands it: a policy file passing for the
// built-in one is a usage error in one line and records nothing, and
// --runs with spaces around its labels and run ids gates those runs.
func gatePolicyFlags(t *testing.T, x *gateExperiment) {
	head := func() ledger.Head { return headOf(t, x.ledger) }
	dir := t.TempDir()

	// Issue 21, case 3: on today's main this passes as "gate PASSED
	// (policy paper-grade)" having claimed nothing and run one audit.
	impersonation := filepath.Join(dir, "impersonation.yaml")
	gateWrite(t, impersonation, "name: paper-grade\nclaims: []\naudits: [budget]\n"+x.policySubjects())
	before := head()
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "gate", "--policy", impersonation)
	want := "rlgate: --policy: policy " + impersonation + `:1: name "paper-grade" is the built-in policy's; Try: pick another name, e.g. name: my-paper-grade (see rlgate help)` + "\n"
	if code != exitUsage || out != "" || errOut != want {
		t.Errorf("impersonating policy: exit %d, stdout %q, stderr\n%s\nwant exit %d and\n%s", code, out, errOut, exitUsage, want)
	}
	if d := cmp.Diff(before, head()); d != "" {
		t.Errorf("the refused gate wrote to the ledger (-before +after):\n%s", d)
	}

	// Issue 22: labels and run ids with spaces around them.
	holds := filepath.Join(dir, "holds.yaml")
	gateWrite(t, holds, "name: rl-over-base\nclaims: [\"rl > base\"]\naudits: [training]\n")
	var spaced []string
	for _, pair := range strings.Split(x.runs, ",") {
		label, run, _ := strings.Cut(pair, "=")
		spaced = append(spaced, " "+label+" = "+run+" ")
	}
	code, out, errOut = rlgate(t, "--ledger", x.ledger, "gate", "--policy", holds, "--runs", strings.Join(spaced, ","), "--train", strings.ReplaceAll(x.train, "=", " = "))
	if code != exitOK || !strings.Contains(out, "gate PASSED (policy rl-over-base: claims rl > base; audits training; α 0.05; differs from paper-grade: drops claims rl > noupdate, sft > base, drops audits gold, split, budget, reward, identity)") {
		t.Errorf("--runs %q: exit %d:\n%s%s", strings.Join(spaced, ","), code, out, errOut)
	}
	code, _, errOut = rlgate(t, "--ledger", x.ledger, "gate", "--policy", holds, "--runs", "rl=ev-rl.spider-greedy, rl =ev-base.spider-greedy")
	if want := "rlgate: --runs: label \"rl\" given twice (see rlgate help)\n"; code != exitUsage || errOut != want {
		t.Errorf("a label given twice: exit %d, stderr %q, want exit %d and %q", code, errOut, exitUsage, want)
	}
}

// TestAuditOptionFlagRanges: the flags that set audit options are held to
// the ranges a policy file's options are (docs/GATE.md), as usage errors
// in one line, before any ledger is read.
func TestAuditOptionFlagRanges(t *testing.T) {
	t.Parallel()
	ldir := filepath.Join(t.TempDir(), "no-ledger")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gate", "--runs", "base=a,rl=b", "--near-duplicate", "5"}, `--near-duplicate "5": want 0.5 ≤ near_duplicate ≤ 1`},
		{[]string{"gate", "--runs", "base=a,rl=b", "--max-kl-growth", "1e9"}, `--max-kl-growth "1e9": want 1 ≤ max_kl_growth ≤ 100`},
		{[]string{"audit", "reward", "--runs", "base=a", "--self-grade-sample", "0"}, `--self-grade-sample "0": want 20 ≤ self_grade_sample ≤ 100,000`},
		{[]string{"audit", "gold", "--runs", "base=a", "--gold-substring", "-1"}, `--gold-substring "-1": want 16 ≤ gold_substring ≤ 200`},
		{[]string{"audit", "gold", "--runs", "base=a", "--mutate", "-3"}, `--mutate "-3": want 0 ≤ mutate ≤ 10,000`},
		{[]string{"audit", "gold", "--runs", "base=a", "--mutate", "3", "--mutate-endpoint", "ftp://models"}, `--mutate-endpoint "ftp://models": want an http:// or https:// URL`},
	} {
		code, out, errOut := rlgate(t, append([]string{"--ledger", ldir}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "rlgate: "+tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line starting %q", strings.Join(tc.args, " "), code, errOut, exitUsage, "rlgate: "+tc.want)
		}
	}
}
