//go:build postgres

package ledger_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGFaultServerStopped: the PostgreSQL server stopped (pg_ctl stop -m
// immediate) while 4 processes on two hosts append: each exits 1 with one
// error naming the ledger and what to do, not the driver's; after a
// restart nothing is half-written (every reported entry is there, the
// chain and derived tables verify clean) and appending goes on.
func TestPGFaultServerStopped(t *testing.T) {
	pg := ledgertest.StartPostgres(t)
	l, err := ledger.Init(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	hosts := map[string]string{"a-": pgfaultHost(t, pg.URL), "b-": pgfaultHost(t, pg.URL)}
	u, _ := url.Parse(pg.URL)
	u.RawQuery = "sslmode=disable"
	shown := u.Redacted()

	const procs = 4
	committed := map[int64]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stderr := make([]bytes.Buffer, procs)
	started := make(chan bool, procs)
	var waits []func() error
	for p := range procs {
		prefix := []string{"a-", "b-"}[p%2]
		cmd := childCmd(t, "crash", hosts[prefix], fmt.Sprintf("%swriter-%d", prefix, p), 0)
		cmd.Stderr = &stderr[p]
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		wg.Go(func() {
			br := bufio.NewReader(stdout)
			line, err := br.ReadString('\n')
			started <- err == nil
			if err == nil {
				readCommitted(strings.NewReader(line), committed, &mu)
				readCommitted(br, committed, &mu)
			}
		})
		waits = append(waits, cmd.Wait)
	}
	for range procs {
		if !<-started {
			t.Fatal("an appender ended before committing anything")
		}
	}
	pg.StopImmediately()
	wg.Wait()
	for p, wait := range waits {
		err := wait()
		msg := stderr[p].String()
		if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 1 {
			t.Errorf("appender %d: %v, want exit 1 once the server is gone; stderr %q", p, err, msg)
		}
		t.Logf("appender %d: %s", p, strings.TrimSpace(msg))
		want := "ledger " + shown + ": the PostgreSQL server went away or cannot be reached ("
		if !strings.Contains(msg, want) || !strings.Contains(msg, "Try: check that the PostgreSQL server is running") ||
			strings.Count(strings.TrimSpace(msg), "\n") != 0 || strings.Contains(msg, "SQLSTATE") {
			t.Errorf("appender %d said %q; want one line with %q and the hint, no driver detail", p, msg, want)
		}
	}

	pg.Start()
	rep := pgfaultCheckHosts(t, hosts)
	// An append cut off at its COMMIT may have committed without being
	// reported: at most one batch (3 entries) of each appender.
	if extra := rep.Entries - 1 - int64(len(committed)); extra < 0 || extra > 3*procs {
		t.Errorf("%d entries on the chain, %d reported committed by %d appenders", rep.Entries, len(committed), procs)
	}
	pgfaultCommitted(t, pg.URL, committed)
	l, err = ledger.Open(ctx, hosts["a-"])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(ctx, ledger.Record{Kind: "note", Body: map[string]string{"after": "restart"}}); err != nil {
		t.Errorf("append after the restart: %v", err)
	}
	ledgertest.Check(t, l)
}

// TestPGFaultNotServerErrors: an append refused for a reason of its own (a
// blob that is not stored, whose check fails with a system error) is not
// taken for a lost server.
func TestPGFaultNotServerErrors(t *testing.T) {
	l, err := ledger.Init(ctx, ledgertest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Append(ctx, ledger.Record{Kind: "note", Body: map[string]int{"i": 1}, Blobs: []ledger.Digest{ledger.Sum([]byte("never stored"))}})
	if !errors.Is(err, ledger.ErrBlobMissing) || errors.Is(err, ledger.ErrServerGone) {
		t.Errorf("append naming a blob that is not stored: %v, want ErrBlobMissing only", err)
	}
}
