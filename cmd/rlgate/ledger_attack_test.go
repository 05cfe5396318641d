package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// TestInitSurvivesSIGKILL kills a real `rlgate init` at points spread over
// the time a whole init takes. Afterwards the directory holds either a
// ledger that verifies or no ledger, and `init` then succeeds.
func TestInitSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	full := filepath.Join(t.TempDir(), "ledger")
	start := time.Now()
	if out, err := rlgateProcess(t, "--ledger", full, "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	took := time.Since(start)
	const points = 16
	for i := range points {
		dir := filepath.Join(t.TempDir(), "ledger")
		cmd := rlgateProcess(t, "--ledger", dir, "init")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(took * time.Duration(i) / points)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		code, _, errOut := rlgate(t, "--ledger", dir, "init")
		switch {
		case code == exitOK:
		case strings.Contains(errOut, "already exists"):
		default:
			t.Errorf("kill point %d/%d: init again: exit %d: %s", i, points, code, errOut)
			continue
		}
		if code, out, errOut := rlgate(t, "--ledger", dir, "verify"); code != exitOK {
			t.Errorf("kill point %d/%d: verify: exit %d: %s%s", i, points, code, out, errOut)
		}
	}
}

// TestInitTargets: init creates a missing directory or fills an empty one,
// refuses one that holds other files or a ledger, and says what to do with
// the empty ledger.db an interrupted init of an earlier rlgate left.
func TestInitTargets(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	if code, _, errOut := rlgate(t, "--ledger", empty, "init"); code != exitOK {
		t.Errorf("init in an empty directory: exit %d: %s", code, errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", empty, "init"); code != exitError || !strings.Contains(errOut, "already exists") {
		t.Errorf("init over a ledger: exit %d: %s", code, errOut)
	}

	busy := t.TempDir()
	os.WriteFile(filepath.Join(busy, "notes.txt"), []byte("mine"), 0o644)
	if code, _, errOut := rlgate(t, "--ledger", busy, "init"); code != exitError || !strings.Contains(errOut, "not empty") || !strings.Contains(errOut, "Try:") {
		t.Errorf("init in a directory holding other files: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(busy, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("a refused init touched the directory: %q, %v", b, err)
	}

	// What an interrupted init of an earlier rlgate left: an empty SQLite
	// file (here, zero bytes) and the blob store.
	half := t.TempDir()
	os.MkdirAll(filepath.Join(half, "blobs", "tmp"), 0o755)
	os.WriteFile(filepath.Join(half, "ledger.db"), nil, 0o644)
	for _, verb := range []string{"init", "verify"} {
		code, _, errOut := rlgate(t, "--ledger", half, verb)
		if code != exitError || !strings.Contains(errOut, "interrupted rlgate init") || !strings.Contains(errOut, "Try: remove "+half) {
			t.Errorf("%s on a half-initialised ledger: exit %d: %s", verb, code, errOut)
		}
	}
	// Beside the user's own files, the hint must not say to remove them.
	os.WriteFile(filepath.Join(half, "notes.txt"), []byte("mine"), 0o644)
	code, _, errOut := rlgate(t, "--ledger", half, "init")
	if want := "Try: remove " + filepath.Join(half, "ledger.db") + " and " + filepath.Join(half, "blobs"); code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("init on a half-initialised ledger beside other files: exit %d: %s, want %q", code, errOut, want)
	}
	os.RemoveAll(half)
	if code, _, errOut := rlgate(t, "--ledger", half, "init"); code != exitOK {
		t.Errorf("init after following the hint: exit %d: %s", code, errOut)
	}
	l, err := ledger.Open(context.Background(), half)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// attackLedger makes a ledger with a few entries and one blob and returns
// its directory, the printed head and the blob's digest.
func attackLedger(t *testing.T) (dir, head string, blob ledger.Digest) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.Init(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if blob, err = l.PutBlobBytes([]byte("stage output\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), ledger.Record{Kind: "log", Run: "r1", Body: map[string]string{"stream": "stdout"}, Blobs: []ledger.Digest{blob}}); err != nil {
		t.Fatal(err)
	}
	h, err := l.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dir, h.String(), blob
}

// attackExec changes ledger.db behind rlgate's back through database/sql.
func attackExec(t *testing.T, dir, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestVerifyCLIFindsAttacks: each change exits 3 with a finding naming it,
// with and without --against the head printed before the change.
func TestVerifyCLIFindsAttacks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		attack func(t *testing.T, dir string)
		want   string
	}{
		{"entry inserted with seq 0", func(t *testing.T, dir string) {
			attackExec(t, dir, `INSERT INTO entries SELECT 0, prev, hash, kind, run, at, blobs, body FROM entries WHERE seq = 2`)
		}, "error [chain] entry 0 is outside the chain"},
		{"entry inserted with seq -1", func(t *testing.T, dir string) {
			attackExec(t, dir, `INSERT INTO entries VALUES (-1, '', '', 'note', '', '', '', '{}')`)
		}, "error [chain] entry -1: entry -1 is outside the chain"},
		{"trigger added", func(t *testing.T, dir string) {
			attackExec(t, dir, `CREATE TRIGGER keep AFTER INSERT ON entries BEGIN DELETE FROM entries WHERE seq < 0; END`)
		}, "error [schema] trigger keep (on entries) was not created by rlgate"},
		{"derived row edited and derived_version reset", func(t *testing.T, dir string) {
			attackExec(t, dir, `UPDATE blob_refs SET seq = 1`)
			attackExec(t, dir, `UPDATE meta SET value = '0' WHERE key = 'derived_version'`)
		}, "error [derived] table blob_refs row 1"},
		{"page of ledger.db corrupted", func(t *testing.T, dir string) {
			db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			var root int64
			if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'entries'`).Scan(&root); err != nil {
				t.Fatal(err)
			}
			db.Close()
			f, err := os.OpenFile(filepath.Join(dir, "ledger.db"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, (root-1)*4096); err != nil {
				t.Fatal(err)
			}
		}, "error [sqlite] integrity check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, head, _ := attackLedger(t)
			tt.attack(t, dir)
			for _, args := range [][]string{{"verify"}, {"verify", "--against", head}} {
				code, out, errOut := rlgate(t, append([]string{"--ledger", dir}, args...)...)
				if code != exitCheckFailed || !strings.Contains(out, tt.want) {
					t.Errorf("%s: exit %d, want %d and %q:\n%s%s", strings.Join(args, " "), code, exitCheckFailed, tt.want, out, errOut)
				}
			}
		})
	}
}

// TestVerifySIGINT: SIGINT stops verify mid-way through hashing a blob
// that would take minutes (a sparse 1 TiB file standing in for one), and
// it exits 130 saying it was interrupted.
func TestVerifySIGINT(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to see when verify has the blob open")
	}
	dir, _, blob := attackLedger(t)
	path := filepath.Join(dir, "blobs", blob.Hex()[:2], blob.Hex())
	os.Chmod(path, 0o644)
	if err := os.Truncate(path, 1<<40); err != nil {
		t.Fatal(err)
	}
	code, stderr := interruptWhenOpen(t, path, "--ledger", dir, "verify")
	if code != exitInterrupted || !strings.Contains(stderr, "interrupted") {
		t.Errorf("exit %d, want %d and 'interrupted':\n%s", code, exitInterrupted, stderr)
	}
}
