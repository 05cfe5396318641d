package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// TestMain lets the test binary act as the rlgate command in child-process
// tests: with RLGATE_TEST_MAIN set it runs the CLI on its arguments.
func TestMain(m *testing.M) {
	if os.Getenv("RLGATE_TEST_MAIN") == "1" {
		os.Exit(runMain(append([]string{"rlgate"}, os.Args[1:]...)))
	}
	code := m.Run()
	if exportFixture.root != "" {
		os.RemoveAll(exportFixture.root)
	}
	removeSharedFixtures()
	os.Exit(code)
}

// rlgateProcess starts the CLI as a real child process.
func rlgateProcess(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RLGATE_TEST_MAIN=1")
	return cmd
}

func TestSIGKILLMidStage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	script := `echo $$ > stage.pid; i=0; while true; do i=$((i+1)); echo "{\"step\": $i, \"data\": {\"critic/score/mean\": 0.5}}" >> m.jsonl; echo "step $i"; sleep 0.05; done`
	cmd := rlgateProcess(t, "--ledger", ldir, "run", "--stage", "rl1", "--run", "rl1-killed", "--gpu", "off", "--flush", "100ms",
		"--metrics", filepath.Join(work, "m.jsonl")+":verl", "--", "sh", "-c", "cd "+work+" && "+script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until metrics have reached the ledger, then kill rlgate.
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := ledger.Open(context.Background(), ldir)
		if err != nil {
			t.Fatal(err)
		}
		pts, _, _ := l.Series(context.Background(), "rl1-killed", "critic/score/mean")
		l.Close()
		if len(pts) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no metrics reached the ledger within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The stage itself must not outlive its recorder.
	pidText, _ := os.ReadFile(filepath.Join(work, "stage.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	for i := 0; ; i++ {
		if err := syscall.Kill(pid, 0); err != nil {
			break
		}
		if i > 100 {
			t.Fatalf("stage process %d still running 5s after rlgate was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}

	l, err := ledger.Open(context.Background(), ldir) // this open closes the run
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runs, _ := l.Runs(context.Background())
	if len(runs) != 1 || runs[0].Status != "interrupted" {
		t.Fatalf("runs after SIGKILL: %+v", runs)
	}
	pts, _, _ := l.Series(context.Background(), "rl1-killed", "critic/score/mean")
	if len(pts) < 5 {
		t.Errorf("metrics logged before the kill were lost: %d points", len(pts))
	}
	logs := 0
	for _, err := range l.Entries(context.Background(), ledger.Filter{Run: "rl1-killed", Kind: "log"}) {
		if err != nil {
			t.Fatal(err)
		}
		logs++
	}
	if logs == 0 {
		t.Error("output logged before the kill was lost")
	}
	rep, err := l.Verify(context.Background(), ledger.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify after SIGKILL: %v %+v", err, rep.Findings)
	}
}

// TestSIGINTStopsStageAndExits130: an interrupted rlgate forwards the
// signal to the stage (SIGTERM), records the run as interrupted, and exits
// 130.
func TestSIGINTStopsStageAndExits130(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	marker := filepath.Join(dir, "got-term")
	// The stage traps SIGTERM and leaves a marker, proving the signal reached it.
	script := "trap 'touch " + marker + "; exit 143' TERM; echo ready; while true; do sleep 0.05; done"
	cmd := rlgateProcess(t, "--ledger", ldir, "run", "--stage", "eval", "--run", "eval-int", "--gpu", "off", "--", "sh", "-c", script)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("stage did not start: %q %v", buf, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	go io.Copy(io.Discard, stdout)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d (%v), want %d", code, err, exitInterrupted)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the stage never received SIGTERM")
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if st, err := l.RunStatus(context.Background(), "eval-int"); err != nil || st.Status != "interrupted" {
		t.Errorf("run status %+v, %v", st, err)
	}
}

// interruptWhenOpen runs rlgate args as a child process, sends it SIGINT
// once /proc shows it has busy open (so the signal lands while it reads
// busy, with no timing guess), and returns its exit code and stderr. A
// child still running 30 s after the signal has ignored it: the test kills
// it and fails.
func interruptWhenOpen(t *testing.T, busy string, args ...string) (int, string) {
	t.Helper()
	cmd := rlgateProcess(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fds := fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)
	for opened := false; !opened; {
		select {
		case err := <-done:
			t.Fatalf("rlgate %s ended before it opened %s: %v\n%s", strings.Join(args, " "), busy, err, &stderr)
		case <-time.After(10 * time.Millisecond):
		}
		ents, _ := os.ReadDir(fds)
		for _, e := range ents {
			if target, _ := os.Readlink(filepath.Join(fds, e.Name())); target == busy {
				opened = true
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("rlgate %s ignored SIGINT: still running 30 s later", strings.Join(args, " "))
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}
