package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/workflow/gate"
)

// evil is a run id and stage name as a ledger from a CI artifact may hold
// them (written by an rlgate before ledger.CheckName, or forged in
// ledger.db): retitle the terminal, ring, clear the screen, reverse the
// text that follows, and CSI in its 8-bit form.
const (
	evilRun   = "evil\x1b]0;pwned\a\x1b[2J"
	evilStage = "sft\x1b[31m\u202e\u009b"
	shownRun  = `evil\x1b]0;pwned\a\x1b[2J`
	shownStg  = `sft\x1b[31m\u202e\u009b`
)

// sqlString is s as an SQLite string expression, its control characters
// written with char().
func sqlString(s string) string {
	var parts []string
	for _, r := range s {
		parts = append(parts, "char("+strconv.Itoa(int(r))+")")
	}
	return strings.Join(parts, " || ")
}

// TestOutputEscapesLedgerNames: every command that prints what a ledger
// holds shows control characters in run ids and stage names as visible
// escapes, so a ledger cannot repaint the reader's terminal.
func TestOutputEscapesLedgerNames(t *testing.T) {
	t.Parallel()
	dir := ledgerWithRuns(t, "sft=evil")
	attackExec(t, dir, "UPDATE entries SET run = "+sqlString(evilRun)+" WHERE run = 'evil'")
	attackExec(t, dir, "UPDATE runs SET run = "+sqlString(evilRun)+", stage = "+sqlString(evilStage)+" WHERE run = 'evil'")
	attackExec(t, dir, "UPDATE meta SET value = value || char(27) || '[2J' WHERE key = 'ledger_id'")

	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"runs"}, []string{shownRun, shownStg}},
		{[]string{"log"}, []string{shownRun}},
		{[]string{"log", "--run", evilRun}, []string{shownRun}},
		{[]string{"show", "2"}, []string{"run   " + shownRun + "\n"}},
		{[]string{"head"}, []string{`\x1b[2J/3/blake3:`}},
		{[]string{"verify"}, nil},
	} {
		code, out, errOut := rlgate(t, append([]string{"--ledger", dir}, tt.args...)...)
		if code == exitUsage || code == exitInterrupted {
			t.Errorf("%q: exit %d: %s", tt.args, code, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: stdout does not show %q: %q", tt.args, w, out)
			}
		}
		assertPrintable(t, fmt.Sprintf("%q", tt.args), out+errOut)
	}

	// The gate's table and summary line: names and messages come from a
	// policy file and the ledger.
	v := &audit.Verdict{Policy: audit.Policy{Name: "paper\x1b]0;x\a"}, Failed: 1, Checks: []audit.GateCheck{
		{Name: "claim rl\x1b[8m > base", Message: "run " + evilRun + " has no outcomes"},
	}}
	var b bytes.Buffer
	if err := gate.WriteVerdict(&b, v, false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`claim rl\x1b[8m > base`, shownRun, `policy paper\x1b]0;x\a`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("gate output does not show %q: %q", w, b.String())
		}
	}
	assertPrintable(t, "gate", b.String())
}

// assertPrintable fails when s holds a rune a terminal would act on
// rather than show: anything strconv.IsPrint refuses but newline.
func assertPrintable(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		if r != '\n' && !strconv.IsPrint(r) {
			t.Errorf("%s: output holds %U at byte %d: %q", what, r, i, s)
			return
		}
	}
}
