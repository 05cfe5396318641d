package main

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/rlgate/rlgate/workflow/textout"
)

// TestRunsListsEveryRun: rlgate runs lists each run with its status,
// stage, timing and, where its run.end gives one, the reason it failed or
// was interrupted; before, no command listed runs.
func TestRunsListsEveryRun(t *testing.T) {
	t.Parallel()
	dir := readonlyFixture(t, false) // holds rl1-abandoned, left running
	for _, argv := range [][]string{
		{"run", "--stage", "sft", "--run", "sft-ok", "--gpu", "off", "--", "true"},
		{"run", "--stage", "rl2", "--run", "rl2-exit3", "--gpu", "off", "--", "sh", "-c", "exit 3"},
	} {
		rlgate(t, append([]string{"--ledger", dir}, argv...)...) // rl2-exit3 exits 1, as its stage failed
	}
	code, out, errOut := rlgate(t, "--ledger", dir, "runs", "--json")
	if code != exitOK {
		t.Fatalf("runs --json: exit %d: %s", code, errOut)
	}
	var got []ledgers.RunRow
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	ok, three := 0, 3
	// rlgate run's writing open closed rl1-abandoned before sft-ok started.
	want := []ledgers.RunRow{
		{Run: ledger.Run{Run: "rl1-abandoned", Stage: "rl1", Status: "interrupted"},
			Reason: "the process recording this run ended without closing it (killed or crashed)"},
		{Run: ledger.Run{Run: "sft-ok", Stage: "sft", Status: "ok", ExitCode: &ok}},
		{Run: ledger.Run{Run: "rl2-exit3", Stage: "rl2", Status: "failed", ExitCode: &three}, Reason: "exit status 3"},
	}
	ignore := cmpopts.IgnoreFields(ledger.Run{}, "StartedSeq", "StartedAt", "EndedSeq", "EndedAt")
	if diff := cmp.Diff(want, got, ignore, cmpopts.IgnoreFields(ledgers.RunRow{}, "DurationS")); diff != "" {
		t.Errorf("runs --json (-want +got):\n%s", diff)
	}
	for _, r := range got {
		if r.EndedSeq == nil || r.DurationS == nil || *r.DurationS < 0 || r.StartedAt == "" {
			t.Errorf("run %s: ended_seq %v, duration_s %v, started_at %q", r.Run.Run, r.EndedSeq, r.DurationS, r.StartedAt)
		}
	}

	code, out, _ = rlgate(t, "--ledger", dir, "runs")
	if code != exitOK || !strings.Contains(out, "3 runs") {
		t.Fatalf("runs: exit %d:\n%s", code, out)
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > textout.TermWidth {
			t.Errorf("runs: a line of %d columns, want at most %d:\n%s", n, textout.TermWidth, line)
		}
	}
	for _, s := range []string{"rl2-exit3", "failed", "exit status 3", "interrupted"} {
		if !strings.Contains(out, s) {
			t.Errorf("runs table lacks %q:\n%s", s, out)
		}
	}
}

// TestVersion: rlgate --version prints one line; before, there was no
// such flag (exit 2).
func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, errOut := rlgate(t, "--version")
	if code != exitOK || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "rlgate version ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("--version: exit %d, %q, %q", code, out, errOut)
	}
	// What a build from a modified git checkout records, as go version -m
	// prints it (ParseBuildInfo leaves GoVersion to the caller).
	bi, err := debug.ParseBuildInfo("path\tgithub.com/rlgate/rlgate/cmd/rlgate\n" +
		"mod\tgithub.com/rlgate/rlgate\tv0.3.0\t\nbuild\t-buildmode=exe\nbuild\tvcs=git\n" +
		"build\tvcs.revision=5a3996d1c0ffee5a3996d1c0ffee5a3996d1c0ff\nbuild\tvcs.time=2026-11-30T21:00:00Z\nbuild\tvcs.modified=true\n")
	if err != nil {
		t.Fatal(err)
	}
	bi.GoVersion = "go1.26.8"
	if got, want := formatVersion(bi), "v0.3.0, git 5a3996d1c0ffee5a3996d1c0ffee5a3996d1c0ff, dirty, go1.26.8"; got != want {
		t.Errorf("version of a dirty checkout = %q, want %q", got, want)
	}
}

// TestReadCommandsUsageErrorsExit2: a missing or extra argument, or one
// that is not what the command reads, exits 2 with a message saying what
// is expected, before the ledger is opened. Before, head, verify and init
// ignored extra arguments (verify x exited 0, init x said "a ledger
// already exists"), and show abc / show 0 exited 1.
func TestReadCommandsUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", dir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"show"}, "show takes one argument, an entry's SEQ or HASH; got 0"},
		{[]string{"show", "1", "2"}, "show takes one argument, an entry's SEQ or HASH; got 2"},
		{[]string{"show", "abc"}, `show "abc": want an entry's SEQ (a number from 1) or 4 to 64 hex digits of its HASH`},
		{[]string{"show", "zzzz"}, `show "zzzz": want an entry's SEQ`},
		{[]string{"show", "0"}, "show 0: sequence numbers start at 1"},
		{[]string{"head", "x"}, `rlgate: head takes no arguments, got "x"`},
		{[]string{"verify", "x"}, `rlgate: verify takes no arguments, got "x"`},
		{[]string{"init", "x"}, `rlgate: init takes no arguments, got "x"`},
		{[]string{"runs", "x"}, `rlgate: runs takes no arguments, got "x"`},
		{[]string{"log", "artifact"}, `rlgate: log takes no arguments, got "artifact"`},
		{[]string{"log", "--limit", "abc"}, `--limit "abc": want a whole number`},
		{[]string{"log", "--limit", "0"}, "--limit wants a positive number of entries, got 0"},
		{[]string{"log", "--tail", "-3"}, "--tail wants a positive number of entries, got -3"},
		{[]string{"log", "--limit", "2", "--tail", "2"}, "--limit and --tail exclude each other"},
		{[]string{"hash"}, "hash needs at least one PATH"},
		{[]string{"verify", "--against", "1/2"}, "--against: parse head"},
	} {
		code, _, errOut := rlgate(t, append([]string{"--ledger", dir}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", tt.args, code, errOut, exitUsage, tt.want)
		}
	}
	// A well-formed reference to an entry that does not exist is no usage
	// error: the command ran and found nothing.
	if code, _, errOut := rlgate(t, "--ledger", dir, "show", "99"); code != exitError || !strings.Contains(errOut, "entry 99: not found") {
		t.Errorf("show 99: exit %d, %q", code, errOut)
	}
}
