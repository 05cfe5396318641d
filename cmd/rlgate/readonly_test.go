package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/rlgate/rlgate/workflow/textout"
)

// readonlyCommands are the commands that only read a ledger.
var readonlyCommands = [][]string{
	{"log"},
	{"log", "--json"},
	{"show", "2"},
	{"head"},
	{"verify"},
	{"runs", "--json"},
	{"metrics", "--run", "rl1-abandoned", "--json"},
}

// readonlyFixture makes a ledger holding a dataset entry and a run whose
// recorder died: its run.start is in the chain and its lock file (named as
// docs/FORMAT.md says) exists unlocked, so a writing open would close it.
// With staleDerived, meta.derived_version is older than this build's, as
// in a ledger an earlier rlgate wrote.
func readonlyFixture(t *testing.T, staleDerived bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", dir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", dir, "hash", "--record", "../../testdata/spider/database/concert_singer"); code != exitOK {
		t.Fatal(errOut)
	}
	l, err := ledger.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), ledger.Record{Kind: records.KindRunStart, Run: "rl1-abandoned", Body: map[string]any{"stage": "rl1"}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	locks := filepath.Join(dir, "locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(locks, ledger.Sum([]byte("rl1-abandoned")).Hex()[:32]+".lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if staleDerived {
		db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("UPDATE meta SET value = '0' WHERE key = 'derived_version'"); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	return dir
}

// readonlySnapshot is every file of a ledger directory with its size and
// digest, but for what SQLite's read-only WAL mode creates where it may: the
// -shm index, and an empty -wal (no entry in it).
func readonlySnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		if rel == "ledger.db-shm" || (rel == "ledger.db-wal" && len(b) == 0) {
			return err
		}
		files[rel] = fmt.Sprintf("%d bytes, %s", len(b), ledger.Sum(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// readonlyRunStatus reads the abandoned run's status through rlgate runs.
func readonlyRunStatus(t *testing.T, out string) string {
	t.Helper()
	var runs []ledgers.RunRow
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, out)
	}
	for _, r := range runs {
		if r.Run.Run == "rl1-abandoned" {
			return string(r.Status)
		}
	}
	t.Fatalf("runs --json does not list rl1-abandoned:\n%s", out)
	return ""
}

// TestReadOnlyCommandsWriteNothing: the reading commands leave every byte
// of the ledger directory as it was and append nothing, even when a run
// waits to be closed as interrupted and the derived tables are stale.
// Before, opening for log or verify appended a run.end entry, and
// checkpointed and removed the WAL, rewriting ledger.db.
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		dir := readonlyFixture(t, stale)
		before := readonlySnapshot(t, dir)
		for _, args := range readonlyCommands {
			code, out, errOut := rlgate(t, append([]string{"--ledger", dir}, args...)...)
			if code != exitOK {
				t.Errorf("stale %v, %v: exit %d: %s", stale, args, code, errOut)
			}
			if args[0] == "runs" && code == exitOK {
				if got := readonlyRunStatus(t, out); got != "running" {
					t.Errorf("stale %v: abandoned run has status %q, want running (nothing closes it read-only)", stale, got)
				}
			}
			if diff := cmp.Diff(before, readonlySnapshot(t, dir)); diff != "" {
				t.Fatalf("stale %v: %v changed the ledger directory (-before +after):\n%s", stale, args, diff)
			}
		}
		// A writing command still closes the abandoned run.
		if code, _, errOut := rlgate(t, "--ledger", dir, "hash", "--record", "../../testdata/spider/database/concert_singer"); code != exitOK {
			t.Fatal(errOut)
		}
		if _, out, _ := rlgate(t, "--ledger", dir, "runs", "--json"); readonlyRunStatus(t, out) != "interrupted" {
			t.Errorf("stale %v: a writing open did not close the abandoned run", stale)
		}
	}
}

// TestReadOnlyCommandsOnUnwritableLedger reads a ledger its user cannot
// write: every file 0444, every directory 0555, as for another user's
// ledger or an unpacked CI artifact. Tests run as root, whom permission
// bits do not stop, so as root the commands run as a child process with
// the uid and gid of nobody (65534), to whom the ledger belongs no more
// than to a stranger; as any other user they run in-process. Before, each
// failed with "attempt to write a readonly database".
func TestReadOnlyCommandsOnUnwritableLedger(t *testing.T) {
	stranger := readonlyStranger(t)
	for _, tt := range []struct {
		name string
		make func(t *testing.T) string
		// the abandoned run's status; the live copy's last writer closed it
		status string
	}{
		{"closed cleanly", func(t *testing.T) string { return readonlyFixture(t, false) }, "running"},
		{"stale derived tables", func(t *testing.T) string { return readonlyFixture(t, true) }, "running"},
		{"copied while a writer had it open", readonlyLiveCopy, "interrupted"},
	} {
		dir := tt.make(t)
		_, wantHead, _ := rlgate(t, "--ledger", dir, "head") // as its owner reads it
		readonlyChmod(t, dir)
		before := readonlySnapshot(t, dir)
		for _, args := range readonlyCommands {
			code, out, errOut := stranger(append([]string{"--ledger", dir}, args...)...)
			if code != exitOK {
				t.Errorf("%s, %v: exit %d: %s", tt.name, args, code, errOut)
				continue
			}
			switch args[0] {
			case "runs":
				if got := readonlyRunStatus(t, out); got != tt.status {
					t.Errorf("%s: abandoned run is %s, want %s", tt.name, got, tt.status)
				}
			case "verify":
				if !strings.Contains(out, "0 errors") {
					t.Errorf("%s: verify: %s", tt.name, out)
				}
			case "head":
				if out != wantHead {
					t.Errorf("%s: head %q, want %q", tt.name, out, wantHead)
				}
			}
		}
		if diff := cmp.Diff(before, readonlySnapshot(t, dir)); diff != "" {
			t.Errorf("%s: the ledger directory changed (-before +after):\n%s", tt.name, diff)
		}
	}
}

// readonlyLiveCopy copies a ledger while another connection holds it open,
// after one more entry, so the copy's last entry is still in its -wal file
// (as in an artifact taken from a running pipeline).
func readonlyLiveCopy(t *testing.T) string {
	t.Helper()
	dir := readonlyFixture(t, false)
	hold, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	var n int
	if err := hold.QueryRow("SELECT count(*) FROM entries").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := rlgate(t, "--ledger", dir, "hash", "--record", "../../testdata/spider/database/car_1"); code != exitOK {
		t.Fatal(errOut)
	}
	cp := filepath.Join(t.TempDir(), "ledger")
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(cp, "ledger.db-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("the copy has no entries in its -wal: %v", err)
	}
	return cp
}

// readonlyChmod makes the ledger read-only for everyone and its parents
// traversable, so that a stranger can read it but write nothing.
func readonlyChmod(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o444)
	})
	if err == nil {
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			return os.Chmod(p, 0o555)
		})
	}
	// t.TempDir makes its directories 0700; open the path down to dir.
	for p := filepath.Dir(dir); err == nil && p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		err = os.Chmod(p, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// readonlyStranger returns a way to run the CLI as a user who does not own
// the ledger: nobody, in a child process, when the test runs as root; the
// test's own user, in-process, otherwise.
func readonlyStranger(t *testing.T) func(args ...string) (int, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return func(args ...string) (int, string, string) { return rlgate(t, args...) }
	}
	// The test binary sits in a 0700 build directory; nobody needs a copy.
	bin := filepath.Join(t.TempDir(), "rlgate.test")
	if err := readonlyCopyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(bin); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "RLGATE_TEST_MAIN=1", "HOME=/nonexistent")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
}

func readonlyCopyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// readonlyLogLedger makes a ledger with a real stage run under a long run
// id, whose entries have wide bodies.
func readonlyLogLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", dir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, db := range []string{"concert_singer", "car_1", "dog_kennels"} {
		if code, _, errOut := rlgate(t, "--ledger", dir, "hash", "--record", "../../testdata/spider/database/"+db); code != exitOK {
			t.Fatal(errOut)
		}
	}
	if code, _, errOut := rlgate(t, "--ledger", dir, "run", "--stage", "export", "--run", "export-qwen2.5-coder-7b-instruct-2026-11-30", "--gpu", "off", "--", "sh", "-c", "echo exported"); code != exitOK {
		t.Fatal(errOut)
	}
	return dir
}

func readonlyLogJSON(t *testing.T, dir string, args ...string) []ledger.Entry {
	t.Helper()
	code, out, errOut := rlgate(t, append([]string{"--ledger", dir, "log", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("log --json %v: exit %d: %s", args, code, errOut)
	}
	var es []ledger.Entry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatal(err)
	}
	return es
}

// TestLogLimitTailAndWidth: --limit N keeps the first N entries, --tail N
// the last N, --json stays complete, and the table fits 100 columns.
// Before, there was neither flag and the table was 179 columns wide.
func TestLogLimitTailAndWidth(t *testing.T) {
	t.Parallel()
	dir := readonlyLogLedger(t)
	all := readonlyLogJSON(t, dir)
	if len(all) < 7 {
		t.Fatalf("fixture has %d entries", len(all))
	}
	if diff := cmp.Diff(all[:3], readonlyLogJSON(t, dir, "--limit", "3")); diff != "" {
		t.Errorf("--limit 3 (-want +got):\n%s", diff)
	}
	for n := 1; n <= len(all); n++ {
		if diff := cmp.Diff(all[len(all)-n:], readonlyLogJSON(t, dir, "--tail", fmt.Sprint(n))); diff != "" {
			t.Errorf("--tail %d (-want +got):\n%s", n, diff)
		}
	}
	if diff := cmp.Diff(all, readonlyLogJSON(t, dir, "--tail", "1000")); diff != "" {
		t.Errorf("--tail past the start (-want +got):\n%s", diff)
	}
	runStarts := readonlyLogJSON(t, dir, "--kind", "run.start", "--tail", "1")
	if len(runStarts) != 1 || runStarts[0].Run != "export-qwen2.5-coder-7b-instruct-2026-11-30" {
		t.Errorf("--kind run.start --tail 1: %+v", runStarts)
	}

	for _, args := range [][]string{{}, {"--tail", "2"}, {"--run", "export-qwen2.5-coder-7b-instruct-2026-11-30"}} {
		code, out, errOut := rlgate(t, append([]string{"--ledger", dir, "log"}, args...)...)
		if code != exitOK {
			t.Fatalf("log %v: exit %d: %s", args, code, errOut)
		}
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > textout.TermWidth {
				t.Errorf("log %v: a line of %d columns, want at most %d:\n%s", args, n, textout.TermWidth, line)
			}
		}
		if !strings.Contains(out, all[len(all)-1].Hash.Hex()[:12]) {
			t.Errorf("log %v does not show the last entry's hash prefix:\n%s", args, out)
		}
	}
	_, out, _ := rlgate(t, "--ledger", dir, "log", "--tail", "2")
	if !strings.Contains(out, "2 entries (the last 2)") {
		t.Errorf("log --tail 2 does not say what it shows:\n%s", out)
	}
}
