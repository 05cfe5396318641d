package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger"
)

// TestRunsListsEveryRun: rlgate runs lists each run with its status,
// stage, timing and, where its run.end gives one, the reason it failed or
// was interrupted; before, no command listed runs.
func TestRunsListsEveryRun(t *testing.T) {
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
	var got []runRow
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	ok, three := 0, 3
	// rlgate run's writing open closed rl1-abandoned before sft-ok started.
	want := []runRow{
		{Run: ledger.Run{Run: "rl1-abandoned", Stage: "rl1", Status: "interrupted"},
			Reason: "the process recording this run ended without closing it (killed or crashed)"},
		{Run: ledger.Run{Run: "sft-ok", Stage: "sft", Status: "ok", ExitCode: &ok}},
		{Run: ledger.Run{Run: "rl2-exit3", Stage: "rl2", Status: "failed", ExitCode: &three}, Reason: "exit status 3"},
	}
	ignore := cmpopts.IgnoreFields(ledger.Run{}, "StartedSeq", "StartedAt", "EndedSeq", "EndedAt")
	if diff := cmp.Diff(want, got, ignore, cmpopts.IgnoreFields(runRow{}, "DurationS")); diff != "" {
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
		if n := utf8.RuneCountInString(line); n > termWidth {
			t.Errorf("runs: a line of %d columns, want at most %d:\n%s", n, termWidth, line)
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
