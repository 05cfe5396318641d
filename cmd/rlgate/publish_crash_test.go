package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlgate/rlgate/publish"
)

// TestPublishAfterSIGKILL kills rlgate publish (SIGKILL, from inside, at
// the points publish.EnvCrashPoint names) and checks that the next
// publish to the same --to finishes the job and leaves nothing beside it:
// killed with the bundle staged, the next run builds it again and sweeps
// the staging directory; killed with the bundle in place but no entry, it
// writes the entry for that very bundle; after a newer passing verdict,
// it rebuilds the bundle for it. --to inside the checkpoint is refused,
// and --to's missing parents are made.
func TestPublishAfterSIGKILL(t *testing.T) {
	x := buildGateExperiment(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	if code, _, errOut := rlgate(t, "keygen", "--out", key); code != exitOK {
		t.Fatalf("keygen: %s", errOut)
	}
	code, verdict, ok, _ := publishGate(t, x)
	if code != exitOK || !ok {
		t.Fatalf("gate: exit %d", code)
	}
	publishTo := func(to string) (int, string) {
		return publishRun(t, x.ledger, to, key, "")
	}
	killAt := func(t *testing.T, to, point string) {
		t.Helper()
		if code, errOut := publishRun(t, x.ledger, to, key, point); code != -int(syscall.SIGKILL) {
			t.Fatalf("publish killed at %s: exit %d: %s", point, code, errOut)
		}
	}
	// finished checks that to holds a bundle that verifies, recorded by
	// exactly one publish entry for the verdict seq, and nothing beside it.
	finished := func(t *testing.T, to string, verdict int64) {
		t.Helper()
		if code, failed := publishVerify(t, "--public-key", key+".pub", "--ledger", x.ledger, to); code != exitOK {
			t.Errorf("verify-bundle: exit %d, failed %v", code, failed)
		}
		var recorded []publish.Result
		for _, e := range gateLog(t, x.ledger, "train-rl", records.KindPublish) {
			var r publish.Result
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
			if r.To == to {
				recorded = append(recorded, r)
			}
		}
		if len(recorded) != 1 || recorded[0].Verdict != verdict {
			t.Errorf("publish entries for %s: %+v, want one for verdict %d", to, recorded, verdict)
		}
		if left := publishLeftovers(t, to); len(left) > 0 {
			t.Errorf("left beside the bundle: %v", left)
		}
	}
	t.Run("killed while staging", func(t *testing.T) {
		to := filepath.Join(t.TempDir(), "missing", "parent", "bundle")
		killAt(t, to, "staged")
		if left := publishLeftovers(t, to); len(left) != 1 {
			t.Fatalf("the killed publish left %v beside %s, want its staging directory", left, to)
		}
		if code, errOut := publishTo(to); code != exitOK {
			t.Fatalf("publish again: exit %d: %s", code, errOut)
		}
		finished(t, to, verdict)
	})
	t.Run("killed before its entry", func(t *testing.T) {
		to := filepath.Join(t.TempDir(), "bundle")
		killAt(t, to, "placed")
		sig, err := os.ReadFile(filepath.Join(to, publish.SignatureFile))
		if err != nil {
			t.Fatal(err)
		}
		if code, errOut := publishTo(to); code != exitOK {
			t.Fatalf("publish again: exit %d: %s", code, errOut)
		}
		finished(t, to, verdict)
		if again, _ := os.ReadFile(filepath.Join(to, publish.SignatureFile)); !bytes.Equal(sig, again) {
			t.Error("the complete bundle was signed again, not recorded as it was")
		}
		if code, errOut := publishTo(to); code != exitError || !strings.Contains(errOut, "published there already") {
			t.Errorf("a third publish: exit %d: %s", code, errOut)
		}
	})
	t.Run("killed before its entry, then gated again", func(t *testing.T) {
		to := filepath.Join(t.TempDir(), "bundle")
		killAt(t, to, "placed")
		code, again, ok, _ := publishGate(t, x)
		if code != exitOK || !ok {
			t.Fatalf("gate: exit %d", code)
		}
		verdict = again
		if code, errOut := publishTo(to); code != exitOK {
			t.Fatalf("publish again: exit %d: %s", code, errOut)
		}
		finished(t, to, verdict)
	})
	t.Run("--to inside the checkpoint", func(t *testing.T) {
		ckpt := filepath.Join(x.fixture, "train-rl-out") // gateTrain's --out
		before := demoTree(t, ckpt)
		code, errOut := publishTo(filepath.Join(ckpt, "bundle"))
		if code != exitError || !strings.Contains(errOut, "inside the checkpoint") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if after := demoTree(t, ckpt); len(after) != len(before) {
			t.Errorf("the checkpoint went from %d to %d files", len(before), len(after))
		}
	})
}

// publishRun runs rlgate publish of train-rl as a child process, killed
// at crash point kill (none: ""); it returns the exit code (minus the
// signal's number when a signal ended it) and stderr.
func publishRun(t *testing.T, ldir, to, key, kill string) (int, string) {
	t.Helper()
	cmd := rlgateProcess(t, "--ledger", ldir, "publish", "--run", "train-rl", "--to", to, "--key", key)
	cmd.Env = append(cmd.Env, publish.EnvCrashPoint+"="+kill)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal()), stderr.String()
		}
		return ee.ExitCode(), stderr.String()
	}
	t.Fatal(err)
	return 0, ""
}

// publishLeftovers lists what lies beside the bundle to in its parent.
func publishLeftovers(t *testing.T, to string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(to))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() != filepath.Base(to) {
			out = append(out, e.Name())
		}
	}
	return out
}
