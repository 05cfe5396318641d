//go:build postgres

package ledger_test

import (
	"bufio"
	"bytes"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// pgfaultHost returns the PostgreSQL ledger URL loc with a local blob
// directory of its own: one host of several sharing the database.
func pgfaultHost(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("blobs", filepath.Join(t.TempDir(), "host"))
	u.RawQuery = q.Encode()
	return u.String()
}

// pgfaultStatus opens the ledger as loc (which closes runs whose recorder
// died) and returns run's status.
func pgfaultStatus(t *testing.T, loc, run string) string {
	t.Helper()
	l, err := ledger.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.RunStatus(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	return string(r.Status)
}

// pgfaultAwaitNoAdvisoryLocks waits until no session holds an advisory
// lock: the server drops a killed process's lock when it reads the end of
// its connection, which happens after the process is gone, not at once.
func pgfaultAwaitNoAdvisoryLocks(t *testing.T, loc string) {
	t.Helper()
	db := pgDB(t, loc)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%d advisory locks still held 30 s after their holder was killed", n)
		}
	}
}

// TestPGFaultRunLockAcrossHosts: a run recorded by a process on host 1 is
// the server's to lock, so host 2 neither closes it while its recorder
// lives nor records it too (refused with a clear message); once the
// recorder is SIGKILLed, host 2's next open closes it as interrupted and
// host 2 resumes it.
func TestPGFaultRunLockAcrossHosts(t *testing.T) {
	pg := ledgertest.Postgres(t)
	l, err := ledger.Init(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	host1, host2 := pgfaultHost(t, pg), pgfaultHost(t, pg)

	rec := childCmd(t, "run", host1, "rl-1", 0)
	stdout, err := rec.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	defer rec.Process.Kill()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasSuffix(line, "started\n") {
		t.Fatalf("recorder: %q, %v", line, err)
	}
	if s := pgfaultStatus(t, host2, "rl-1"); s != "running" {
		t.Fatalf("another host's open closed a live run: status %s", s)
	}
	second := childCmd(t, "run", host2, "rl-1", 0)
	var errOut bytes.Buffer
	second.Stderr = &errOut
	if out, err := second.Output(); err == nil || !strings.Contains(errOut.String(), `start run rl-1: run id already in the ledger`) {
		t.Errorf("second recorder of rl-1 on host 2: %v, stdout %q, stderr %q; want it refused", err, out, errOut.String())
	}
	l2, err := ledger.Open(ctx, host2)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.ResumeRun(ctx, "rl-1", ledger.RunStart{Stage: "rl"}); !errors.Is(err, ledger.ErrRunExists) ||
		!strings.Contains(err.Error(), "another process is recording it") {
		t.Errorf("resume of a live run on host 2: %v, want it refused", err)
	}

	rec.Process.Signal(syscall.SIGKILL)
	rec.Wait()
	pgfaultAwaitNoAdvisoryLocks(t, host2)
	if s := pgfaultStatus(t, host2, "rl-1"); s != "interrupted" {
		t.Fatalf("after SIGKILL of host 1's recorder, host 2 sees status %s, want interrupted", s)
	}
	r, err := l2.ResumeRun(ctx, "rl-1", ledger.RunStart{Stage: "rl"})
	if err != nil {
		t.Fatalf("resume on host 2 after the kill: %v", err)
	}
	if s := pgfaultStatus(t, host1, "rl-1"); s != "running" {
		t.Errorf("host 1's open closed the run host 2 resumed: status %s", s)
	}
	if _, err := r.End(ctx, ledger.RunEnd{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	ledgertest.Check(t, l2)
}

// TestPGFaultResumeRace: processes on two hosts resuming one failed run
// at the same moment: in every round exactly one records it, and every
// other is refused, by the run's status (ErrRunExists) or, when it read
// the status before the winner's run.resume committed, by the run's lock
// (ErrRunLocked), saying what to do.
func TestPGFaultResumeRace(t *testing.T) {
	pg := ledgertest.Postgres(t)
	l, err := ledger.Init(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.StartRun(ctx, "rl-1", ledger.RunStart{Stage: "rl"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fail(ctx, errors.New("round 0")); err != nil {
		t.Fatal(err)
	}
	const racers, rounds = 4, 15
	hosts := []string{pgfaultHost(t, pg), pgfaultHost(t, pg)}
	ls := make([]*ledger.Ledger, racers)
	for i := range ls {
		if ls[i], err = ledger.Open(ctx, hosts[i%2]); err != nil {
			t.Fatal(err)
		}
		defer ls[i].Close()
	}
	for round := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []*ledger.ActiveRun
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				r, err := ls[i].ResumeRun(ctx, "rl-1", ledger.RunStart{Stage: "rl"})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, r)
				case !errors.Is(err, ledger.ErrRunExists) && !errors.Is(err, ledger.ErrRunLocked),
					!strings.Contains(err.Error(), "Try: wait for it or stop it") && !strings.Contains(err.Error(), "Try: another process is recording it"):
					t.Errorf("round %d, racer %d: %v, want a refusal saying another process records the run", round, i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("round %d: %d processes resumed the run, want exactly 1", round, len(won))
		}
		if _, err := won[0].Fail(ctx, errors.New("next round")); err != nil {
			t.Fatal(err)
		}
	}
	ledgertest.Check(t, l)
}
