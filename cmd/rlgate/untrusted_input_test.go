package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/publish"
)

// untrustedRun runs rlgate args as a child process and returns its exit
// code, stdout and stderr. The child may use 2 GiB of address space, so
// a regression that reads /dev/zero or a sparse file whole dies of it
// rather than starving the machine; one still running 60 s later (blocked
// on a FIFO, say) is killed and fails the test instead of hanging it.
func untrustedRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 2097152 && exec "$0" "$@"`, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), "RLGATE_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("rlgate %s: still running 60 s later (blocked on a file?), killed\n%s", strings.Join(args, " "), &stderr)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// untrustedOneLine fails the test unless stderr is one line holding every
// one of want.
func untrustedOneLine(t *testing.T, what, stderr string, want ...string) {
	t.Helper()
	line := strings.TrimSuffix(stderr, "\n")
	if line == "" || strings.Contains(line, "\n") {
		t.Errorf("%s: stderr is not one line:\n%s", what, stderr)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("%s: stderr does not say %q:\n%s", what, w, stderr)
		}
	}
}

// untrustedVariant puts at path what a hostile bundle or a careless user
// may leave there, and returns the words an error about it must hold.
// outside is a regular file elsewhere, which a link may lead to.
func untrustedVariant(t *testing.T, variant, path, outside string) string {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	var err error
	switch variant {
	case "link to /dev/zero":
		err = os.Symlink("/dev/zero", path)
	case "link outside":
		err = os.Symlink(outside, path)
	case "FIFO":
		err = syscall.Mkfifo(path, 0o644)
	case "4 GiB sparse file":
		cancelSparseFile(t, path, []byte("{"), 4<<30)
	default:
		t.Fatalf("no variant %q", variant)
	}
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"link to /dev/zero": path + " is a symbolic link, not a regular file",
		"link outside":      path + " is a symbolic link, not a regular file",
		"FIFO":              path + " is a named pipe (FIFO), not a regular file",
		"4 GiB sparse file": path + " is 4 GiB, too large",
	}[variant]
}

var untrustedVariants = []string{"link to /dev/zero", "4 GiB sparse file", "FIFO", "link outside"}

// TestUntrustedBundleFiles: verify-bundle on a bundle whose model.sig or
// rlgate.provenance.json is a link to /dev/zero, a 4 GiB sparse file, a
// FIFO or a link out of the bundle fails the check that reads it (exit 3)
// with a finding naming the file and what it is, instead of running out
// of memory, hanging, or reading a file outside; report --check of a
// bundle's report whose report.json is one refuses it (exit 1) in one
// line.
func TestUntrustedBundleFiles(t *testing.T) {
	t.Parallel()
	ref := filepath.Join(publishOMS, "reference-signer")
	key := filepath.Join(ref, "keys", "signing-key-pub.pem")
	// A regular file outside the bundle: the bundle's own, valid model.sig.
	outside := filepath.Join(t.TempDir(), "model.sig")
	sig, err := os.ReadFile(filepath.Join(ref, "v1.1.0-elliptic-key", publish.SignatureFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, check string }{
		{publish.SignatureFile, publish.CheckSchema},
		{publish.ProvenanceFile, publish.CheckProvenanceSignature},
	} {
		for _, variant := range untrustedVariants {
			t.Run(tc.file+" "+variant, func(t *testing.T) {
				dir := publishCopy(t, filepath.Join(ref, "v1.1.0-elliptic-key"))
				want := untrustedVariant(t, variant, filepath.Join(dir, tc.file), outside)
				code, out, errOut := untrustedRun(t, "verify-bundle", "--json", "--public-key", key,
					"--ignore-path", filepath.Join(dir, "ignore-me"), "--ignore-path", filepath.Join(dir, publish.ProvenanceFile), dir)
				var v publish.Verification
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("exit %d: %v\n%s%s", code, err, out, errOut)
				}
				var failed []string
				var finding string
				for _, c := range v.Checks {
					if !c.OK {
						failed = append(failed, c.Name)
						finding += c.Message
					}
				}
				if code != exitCheckFailed || !cmp.Equal(failed, []string{tc.check}) || !strings.Contains(finding, want) {
					t.Errorf("exit %d, failed %v with %q; want exit 3, failed [%s] saying %q", code, failed, finding, tc.check, want)
				}
				untrustedOneLine(t, "verify-bundle", errOut, "checks failed: "+tc.check)
			})
		}
	}

	ldir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, variant := range untrustedVariants {
		t.Run("report.json "+variant, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), publish.ReportDir)
			if err := os.Mkdir(report, 0o755); err != nil {
				t.Fatal(err)
			}
			want := untrustedVariant(t, variant, filepath.Join(report, "report.json"), outside)
			code, _, errOut := untrustedRun(t, "--ledger", ldir, "report", "--check", report)
			if code != exitError {
				t.Errorf("report --check: exit %d, want 1", code)
			}
			untrustedOneLine(t, "report --check", errOut, want)
		})
	}
}

// TestUntrustedFlagFiles: a FIFO or a link to /dev/zero named by a flag
// that reads a file (--policy, --key, --publish-key, --public-key,
// --certificate-chain, --signature, --config, --metrics, --protocol,
// repro -f, --predictions, --exclude, data import's sources, a checkpoint)
// is refused in one line naming it, instead of hanging or running out of
// memory. The exit code is the command's usual one for a bad file of that
// flag.
func TestUntrustedFlagFiles(t *testing.T) {
	t.Parallel()
	ref := filepath.Join(publishOMS, "reference-signer")
	keyBundle := filepath.Join(ref, "v1.1.0-elliptic-key")
	certBundle := filepath.Join(ref, "v1.1.0-certificate")
	ldir, data := spiderLedger(t)
	sp := "../../testdata/spider"
	for _, variant := range []string{"FIFO", "link to /dev/zero"} {
		path := filepath.Join(t.TempDir(), "input")
		// A user's own link is followed: the device behind it is named.
		want := map[string]string{"FIFO": path + " is a named pipe (FIFO), not a regular file", "link to /dev/zero": path + " is a device, not a regular file"}[variant]
		untrustedVariant(t, variant, path, "")
		for _, tc := range []struct {
			flag string
			code int
			args []string
		}{
			{"--policy", exitUsage, []string{"--ledger", ldir, "gate", "--dry-run", "--policy", path}},
			{"--key", exitError, []string{"--ledger", ldir, "publish", "--run", "r", "--to", filepath.Join(t.TempDir(), "out"), "--key", path}},
			{"--publish-key", exitError, []string{"--ledger", ldir, "run", "--stage", "s", "--gpu", "off",
				"--publish-to", filepath.Join(t.TempDir(), "out"), "--publish-key", path, "--", "true"}},
			{"--public-key", exitError, []string{"verify-bundle", "--public-key", path, keyBundle}},
			{"--certificate-chain", exitError, []string{"verify-bundle", "--certificate-chain", path, certBundle}},
			// The signature is the bundle's: its schema check fails,
			// and the table on stdout says why.
			{"--signature", exitCheckFailed, []string{"verify-bundle", "--public-key", filepath.Join(ref, "keys", "signing-key-pub.pem"), "--signature", path, keyBundle}},
			{"--config", exitError, []string{"--ledger", ldir, "run", "--stage", "s", "--gpu", "off", "--config", path, "--", "true"}},
			{"--protocol", exitError, []string{"data", "render", "--tasks", data, "--protocol", path, "--out", filepath.Join(t.TempDir(), "prompts.jsonl")}},
			{"repro -f", exitError, []string{"--ledger", ldir, "repro", "-f", path, "--dry-run"}},
			{"--predictions", exitError, []string{"--ledger", ldir, "grade", "--predictions", path, "--format", "spider-txt", "--tasks", data, "--metric", "spider"}},
			{"--exclude", exitError, []string{"--ledger", ldir, "export", "rl", "--tasks", data, "--exclude", path, "--format", "jsonl", "--out", filepath.Join(t.TempDir(), "rl.jsonl")}},
			{"ckpt digest", exitError, []string{"ckpt", "digest", path}},
			{"data import --dev", exitError, []string{"--ledger", ldir, "data", "import", "spider", "--dev", path, "--gold", sp + "/dev_gold.sql",
				"--tables", sp + "/tables.json", "--db-root", sp + "/database", "--out", filepath.Join(t.TempDir(), "imported")}},
		} {
			t.Run(tc.flag+" "+variant, func(t *testing.T) {
				code, out, errOut := untrustedRun(t, tc.args...)
				if code != tc.code {
					t.Errorf("exit %d, want %d", code, tc.code)
				}
				if code == exitCheckFailed {
					untrustedOneLine(t, tc.flag, errOut, "checks failed: "+publish.CheckSchema)
					if !strings.Contains(out, want) {
						t.Errorf("the findings do not say %q:\n%s", want, out)
					}
					return
				}
				untrustedOneLine(t, tc.flag, errOut, want)
			})
		}
		// A metrics file that cannot be read is a warning: the stage's
		// exit decides rlgate's, and the run records the finding.
		for _, format := range []string{"", ":verl"} {
			t.Run("--metrics"+format+" "+variant, func(t *testing.T) {
				code, _, errOut := untrustedRun(t, "--ledger", ldir, "run", "--stage", "s", "--gpu", "off", "--metrics", path+format, "--", "true")
				if code != exitOK {
					t.Errorf("exit %d, want the stage's 0", code)
				}
				untrustedOneLine(t, "--metrics", errOut, "rlgate: warning: ", want)
			})
		}
	}
}

// TestSecondInterruptExitsAtOnce: the first SIGINT asks the stage to stop
// (SIGTERM) and waits for it; a stage that ignores it would keep rlgate
// waiting, so a second SIGINT ends rlgate at once, exit 130, while the
// stage still runs, and leaves a ledger that verifies.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	pidFile := filepath.Join(dir, "stage.pid")
	// The stage says "term" on stdout at each SIGTERM and goes on; Ctrl-C
	// at a terminal would reach it too, and it ignores that. After its pid
	// file it writes nothing into the test's directory: a late SIGTERM
	// (its death signal once rlgate is gone) must not create a file there
	// while the directory is being removed. Once rlgate is gone its stdout
	// is a broken pipe, and the next "term" ends it.
	script := "echo $$ > " + pidFile + "; trap 'echo term' TERM; trap '' INT; echo ready; while true; do sleep 0.05; done"
	cmd := rlgateProcess(t, "--ledger", ldir, "run", "--stage", "eval", "--run", "stuck", "--gpu", "off", "--", "sh", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Process.Kill()
		t.Fatalf("the stage did not start: %q %v", lines.Text(), lines.Err())
	}
	termed := make(chan struct{})
	go func() {
		once := sync.OnceFunc(func() { close(termed) })
		for lines.Scan() {
			if lines.Text() == "term" {
				once()
			}
		}
	}()
	pidText, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	t.Cleanup(func() { syscall.Kill(stage, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// First SIGINT: rlgate forwards SIGTERM to the stage, which says so.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-termed:
	case err := <-done:
		t.Fatalf("rlgate ended on the first SIGINT before the stage had SIGTERM: %v\n%s", err, &stderr)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the stage never got SIGTERM after the first SIGINT\n%s", &stderr)
	}
	// Second SIGINT: rlgate exits now, not when the stage ends.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Errorf("rlgate after a second SIGINT: %v, want exit %d", err, exitInterrupted)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("rlgate still running 60 s after a second SIGINT\n%s", &stderr)
	}
	if err := syscall.Kill(stage, 0); err != nil {
		t.Errorf("the stage had ended when rlgate exited (%v): rlgate waited for it instead of exiting at once", err)
	}
	if !strings.Contains(stderr.String(), "interrupted again; exiting at once") {
		t.Errorf("stderr does not say why rlgate exited at once:\n%s", &stderr)
	}
	if code, out, errOut := rlgate(t, "--ledger", ldir, "verify"); code != exitOK {
		t.Errorf("verify after the second SIGINT: exit %d\n%s%s", code, out, errOut)
	}
}
