package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishMovedCheckpoint: a gated run whose checkpoint no longer lies
// where the run recorded it is published from a copy under --data-root
// (found by the tail of its recorded path, checked against its recorded
// manifest); without one, publish fails naming the recorded path and
// writes no bundle. publish --run takes the run's stage as well as its id.
func TestPublishMovedCheckpoint(t *testing.T) {
	x := buildGateExperiment(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	if code, _, errOut := rlgate(t, "keygen", "--out", key); code != exitOK {
		t.Fatalf("keygen: exit %d: %s", code, errOut)
	}
	if code, _, ok, _ := publishGate(t, x); code != exitOK || !ok {
		t.Fatalf("gate: exit %d", code)
	}
	recorded := filepath.Join(x.fixture, "train-rl-out")
	data := t.TempDir()
	moved := filepath.Join(data, "train-rl-out")
	if err := os.Rename(recorded, moved); err != nil {
		t.Fatal(err)
	}
	// The checkpoint is the shared experiment's: put it back for the
	// tests that follow.
	t.Cleanup(func() {
		if err := os.Rename(moved, recorded); err != nil {
			t.Errorf("restore %s: %v", recorded, err)
		}
	})

	bare := filepath.Join(t.TempDir(), "bare")
	code, _, errOut := rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl", "--to", bare, "--key", key)
	if code == exitOK || !strings.Contains(errOut, recorded) {
		t.Errorf("publish without --data-root: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(bare); !os.IsNotExist(err) {
		t.Errorf("a failed publish left %s: %v", bare, err)
	}

	// This time the run is named by its stage: rl's latest run that ended
	// ok, train-rl.
	bundle := filepath.Join(t.TempDir(), "bundle")
	if code, out, errOut := rlgate(t, "--data-root", data, "--ledger", x.ledger, "publish", "--run", "rl", "--to", bundle, "--key", key); code != exitOK ||
		!strings.Contains(out, "published run train-rl ") {
		t.Fatalf("publish with --data-root: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "verify-bundle", bundle, "--public-key", key+".pub"); code != exitOK {
		t.Errorf("verify-bundle: exit %d:\n%s%s", code, out, errOut)
	}
}
