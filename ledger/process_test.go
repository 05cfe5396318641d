package ledger_test

import (
	"bufio"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// These tests run real child processes: the test binary re-executed with
// RLGATE_TEST_CHILD set runs TestChild, which appends to a ledger and
// reports every committed entry on stdout.

const childEnv = "RLGATE_TEST_CHILD"

// TestChild is the child process's body; it does nothing in a normal run.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as a child process of the crash and concurrency tests")
	}
	dir, run := os.Getenv("RLGATE_TEST_DIR"), os.Getenv("RLGATE_TEST_RUN")
	count, _ := strconv.Atoi(os.Getenv("RLGATE_TEST_COUNT"))
	if mode == "crash-on-go" {
		// Started ahead of its turn: open the ledger only when the parent
		// says go, and leave it alone if the parent is gone. Then it
		// writes as a crash child does.
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			os.Exit(0)
		}
		mode = "crash"
	}
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	if mode == "run" {
		// Start a run, log one metric batch, say so, then wait to be killed.
		r, err := l.StartRun(ctx, run, ledger.RunStart{Stage: "rl"})
		if err == nil {
			_, err = l.Append(ctx, ledger.Record{Kind: records.KindMetrics, Run: run, Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: 1, Key: "reward", Value: 0.5}}}})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(out, "committed %d started\n", r.Seq)
		out.Flush()
		time.Sleep(time.Minute)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	for i := 0; count == 0 || i < count; i++ {
		var recs []ledger.Record
		if mode == "crash" {
			// A blob, then one to three entries naming it, in one batch.
			b := make([]byte, 1+rng.IntN(64<<10))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			d, err := l.PutBlobBytes(b)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			for j := 0; j <= rng.IntN(3); j++ {
				recs = append(recs, ledger.Record{Kind: "trajectory", Run: run, Body: map[string]int{"i": i, "j": j}, Blobs: []ledger.Digest{d}})
			}
		} else {
			recs = []ledger.Record{{Kind: "note", Run: run, Body: map[string]int{"i": i}}}
		}
		es, err := l.Append(ctx, recs...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, e := range es {
			fmt.Fprintf(out, "committed %d %s\n", e.Seq, e.Hash.Hex())
		}
		out.Flush()
	}
	l.Close()
	os.Exit(0)
}

func childCmd(t *testing.T, mode, dir, run string, count int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "RLGATE_TEST_DIR="+dir, "RLGATE_TEST_RUN="+run, "RLGATE_TEST_COUNT="+strconv.Itoa(count))
	cmd.Stderr = os.Stderr
	return cmd
}

// readCommitted collects "committed SEQ HASH" lines until r closes.
func readCommitted(r io.Reader, into map[int64]string, mu *sync.Mutex) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "committed" {
			continue
		}
		seq, _ := strconv.ParseInt(f[1], 10, 64)
		mu.Lock()
		into[seq] = f[2]
		mu.Unlock()
	}
}

func TestCrashSafetyUnderSIGKILL(t *testing.T) {
	t.Parallel() // its own ledger; mostly waits on child processes and fsync
	if testing.Short() {
		t.Skip("spawns 32 child processes")
	}
	dir := t.TempDir()
	initLedger(t, dir)
	committed := map[int64]string{}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 7))
	const kills = 32
	// Each child is started while its predecessor runs and is verified,
	// and waits on stdin for its turn: starting a process is most of a
	// kill's cost, and it touches no ledger until told to go.
	start := func(k int) (*exec.Cmd, io.WriteCloser, io.Reader) {
		cmd := childCmd(t, "crash-on-go", dir, fmt.Sprintf("crash-%d", k), 0)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		return cmd, stdin, stdout
	}
	nextCmd, nextIn, nextOut := start(0)
	for k := range kills {
		cmd, stdin, stdout := nextCmd, nextIn, nextOut
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatalf("kill %d: start the child: %v", k, err)
		}
		if k+1 < kills {
			nextCmd, nextIn, nextOut = start(k + 1)
		}
		// The kill lands at a random point after the child's first
		// commit: on a loaded machine a fixed delay from the start could
		// fall before the child had opened the ledger, and test nothing.
		first, done := make(chan struct{}), make(chan struct{})
		br := bufio.NewReader(stdout)
		go func() {
			line, err := br.ReadString('\n')
			close(first)
			if err == nil {
				readCommitted(io.MultiReader(strings.NewReader(line), br), committed, &mu)
			}
			close(done)
		}()
		select {
		case <-first:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("kill %d: the child committed nothing in a minute", k)
		}
		time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: child ended by itself (%v) instead of by SIGKILL", k, err)
		}

		l, err := ledger.Open(ctx, dir)
		if err != nil {
			t.Fatalf("kill %d: open after crash: %v", k, err)
		}
		rep, err := l.Verify(ctx, ledger.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("kill %d: verify after crash:\n%s", k, findings(rep))
		}
		mu.Lock()
		for seq, hash := range committed {
			e, err := l.EntryBySeq(ctx, seq)
			if err != nil || e.Hash.Hex() != hash {
				t.Fatalf("kill %d: entry %d was reported committed (hash %s) but the ledger has %v, %v", k, seq, hash, e.Hash, err)
			}
		}
		mu.Unlock()
		l.Close()
	}
	t.Logf("%d kills, %d committed entries survived and verify stayed clean", kills, len(committed))
}

func TestConcurrentProcesses(t *testing.T) {
	t.Parallel() // its own ledger; mostly waits on child processes and fsync
	if testing.Short() {
		t.Skip("spawns 4 child processes")
	}
	dir := t.TempDir()
	initLedger(t, dir)
	const procs, each = 4, 500
	committed := map[int64]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	cmds := make([]*exec.Cmd, procs)
	for p := range procs {
		cmds[p] = childCmd(t, "append", dir, fmt.Sprintf("writer-%d", p), each)
		stdout, err := cmds[p].StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); readCommitted(stdout, committed, &mu) }()
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer %d: %v", p, err)
		}
	}
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := l.Verify(ctx, ledger.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Entries != procs*each+1 || len(committed) != procs*each {
		t.Fatalf("want %d entries on one clean chain, got %d entries, %d reported:\n%s", procs*each+1, rep.Entries, len(committed), findings(rep))
	}
	for p := range procs {
		n := 0
		for _, err := range l.Entries(ctx, ledger.Filter{Run: fmt.Sprintf("writer-%d", p)}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != each {
			t.Errorf("writer %d: %d entries, want %d", p, n, each)
		}
	}
}

func TestKilledRunIsMarkedInterrupted(t *testing.T) {
	dir := t.TempDir()
	initLedger(t, dir)
	cmd := childCmd(t, "run", dir, "rl-stage-1", 0)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasSuffix(line, "started\n") {
		t.Fatalf("child: %q, %v", line, err)
	}
	status := func() string {
		l, err := ledger.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		runs, err := l.Runs(ctx)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs %+v, %v", runs, err)
		}
		return string(runs[0].Status)
	}
	if s := status(); s != "running" {
		t.Fatalf("a live run was closed by another process's open: status %s", s)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if s := status(); s != "interrupted" {
		t.Fatalf("after SIGKILL: status %s, want interrupted", s)
	}
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if pts, _, _ := l.Series(ctx, "rl-stage-1", "reward"); len(pts) != 1 {
		t.Errorf("metrics logged before the kill were lost: %v", pts)
	}
	if rep, err := l.Verify(ctx, ledger.VerifyOptions{}); err != nil || !rep.OK() {
		t.Errorf("verify: %v %s", err, findings(rep))
	}
}
