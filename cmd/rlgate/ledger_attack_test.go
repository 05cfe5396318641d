package main

import (
	"context"
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
