//go:build postgres

package ledger_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// These tests run the child processes of process_test.go (TestChild)
// against a PostgreSQL ledger, in two groups with separate local blob
// directories standing in for two hosts. Blobs are local to a host (see
// docs/FORMAT.md), so a host's verify finds the other host's blobs
// missing and nothing else; pgfaultShareBlobs then gives each host the
// other's blobs, as a shared blob store would, and verify is clean.

// pgfaultBlobDir returns the local blob directory a ledger URL names.
func pgfaultBlobDir(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("blobs")
}

// pgfaultShareBlobs copies every blob of each host's directory into every
// other's (blobs are named by their digest, so a copy is the same blob).
func pgfaultShareBlobs(t *testing.T, hosts ...string) {
	t.Helper()
	for _, from := range hosts {
		root := filepath.Join(pgfaultBlobDir(t, from), "blobs")
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) == "tmp" {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			for _, to := range hosts {
				dst := filepath.Join(pgfaultBlobDir(t, to), "blobs", rel)
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(dst, b, 0o444); err != nil && !os.IsPermission(err) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// pgfaultCheckHosts verifies the ledger from each host: the findings must
// all be blobs missing from entries of the other hosts' runs (whose
// prefix runOf maps each host to); then, with the blobs shared, verify
// must be clean from every host. It returns the clean report.
func pgfaultCheckHosts(t *testing.T, hosts map[string]string) *ledger.VerifyReport {
	t.Helper()
	var all []string
	for prefix, loc := range hosts {
		all = append(all, loc)
		l, err := ledger.OpenReadOnly(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := l.Verify(ctx, ledger.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pgfaultOthersBlobs(t, l, rep, prefix)
		l.Close()
	}
	pgfaultShareBlobs(t, all...)
	var rep *ledger.VerifyReport
	for _, loc := range all {
		l, err := ledger.OpenReadOnly(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		rep = ledgertest.Check(t, l)
		l.Close()
	}
	return rep
}

// pgfaultOthersBlobs fails the test unless every error verify found on
// the host whose runs' names start with prefix is a blob named only by
// other hosts' entries.
func pgfaultOthersBlobs(t *testing.T, l *ledger.Ledger, rep *ledger.VerifyReport, prefix string) {
	t.Helper()
	namedHere := map[string]bool{}
	for e, err := range l.Entries(ctx, ledger.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range e.Blobs {
			if strings.HasPrefix(e.Run, prefix) {
				namedHere[d.String()] = true
			}
		}
	}
	for _, f := range rep.Findings {
		if f.Severity == ledger.SeverityError && (f.Check != "blob" || f.Digest == "" || namedHere[f.Digest]) {
			t.Errorf("verify on host %s: %s: only blobs of other hosts' entries may be missing here", prefix, f)
		}
	}
}

// pgfaultCommitted checks that every entry a child reported committed is
// in the ledger with the hash it reported.
func pgfaultCommitted(t *testing.T, loc string, committed map[int64]string) {
	t.Helper()
	l, err := ledger.OpenReadOnly(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for seq, hash := range committed {
		if e, err := l.EntryBySeq(ctx, seq); err != nil || e.Hash.Hex() != hash {
			t.Errorf("entry %d was reported committed (hash %s) but the ledger has %v, %v", seq, hash, e.Hash, err)
		}
	}
}

// TestPGFaultConcurrentProcesses: 8 processes, 4 on each of two hosts,
// append batches of entries naming a fresh blob to one PostgreSQL ledger
// at once: one chain holding every entry each reported committed, each
// host's entries' blobs in its own directory, verify clean.
func TestPGFaultConcurrentProcesses(t *testing.T) {
	pg := ledgertest.Postgres(t)
	hosts := map[string]string{"a-": pgfaultHost(t, pg), "b-": pgfaultHost(t, pg)}
	committed := pgfaultAppendAtOnce(t, pg, hosts)
	rep := pgfaultCheckHosts(t, hosts)
	pgfaultAllCommitted(t, pg, rep, committed)
}

// pgfaultWriters and pgfaultBatches: 8 processes of 25 batches each.
const pgfaultWriters, pgfaultBatches = 8, 25

// pgfaultAppendAtOnce creates the ledger at pg and runs pgfaultWriters
// child processes, alternating between the hosts' locations, each
// appending pgfaultBatches batches of a fresh blob and entries naming it;
// it returns the entries they reported committed, by seq.
func pgfaultAppendAtOnce(t *testing.T, pg string, hosts map[string]string) map[int64]string {
	t.Helper()
	l, err := ledger.Init(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	committed := map[int64]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var cmds []*exec.Cmd
	for p := range pgfaultWriters {
		prefix := []string{"a-", "b-"}[p%2]
		cmd := childCmd(t, "crash", hosts[prefix], fmt.Sprintf("%swriter-%d", prefix, p), pgfaultBatches)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { readCommitted(stdout, committed, &mu) })
		cmds = append(cmds, cmd)
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
	return committed
}

// pgfaultAllCommitted checks that the chain verify read holds exactly
// ledger.init and every entry the writers reported committed.
func pgfaultAllCommitted(t *testing.T, pg string, rep *ledger.VerifyReport, committed map[int64]string) {
	t.Helper()
	if rep.Entries != int64(len(committed))+1 || len(committed) < pgfaultWriters*pgfaultBatches {
		t.Errorf("%d entries on the chain, %d reported committed by %d writers of %d batches: want every batch's entries and ledger.init, no more",
			rep.Entries, len(committed), pgfaultWriters, pgfaultBatches)
	}
	pgfaultCommitted(t, pg, committed)
}

// TestPGFaultSIGKILL: 30 appenders, alternating between two hosts, each
// SIGKILLed at a random point of appending blobs and entries naming them:
// after every kill, no entry it reported committed is lost and verify
// finds no entry naming an absent blob; at the end the chain verifies
// clean from both hosts.
func TestPGFaultSIGKILL(t *testing.T) {
	pg := ledgertest.Postgres(t)
	l, err := ledger.Init(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	hosts := map[string]string{"a-": pgfaultHost(t, pg), "b-": pgfaultHost(t, pg)}
	committed := map[int64]string{}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(17, 17))
	const kills = 30
	for k := range kills {
		prefix := []string{"a-", "b-"}[k%2]
		cmd := childCmd(t, "crash", hosts[prefix], fmt.Sprintf("%scrash-%d", prefix, k), 0)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The kill falls at a random point after the child's first commit,
		// however long it took to start.
		br := bufio.NewReader(stdout)
		first, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("child %d ended before committing anything: %v", k, err)
		}
		done := make(chan struct{})
		go func() { readCommitted(io.MultiReader(strings.NewReader(first), br), committed, &mu); close(done) }()
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: child ended by itself (%v) instead of by SIGKILL", k, err)
		}
		// The killed child's host holds every blob its entries name.
		lk, err := ledger.OpenReadOnly(ctx, hosts[prefix])
		if err != nil {
			t.Fatal(err)
		}
		rep, err := lk.Verify(ctx, ledger.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pgfaultOthersBlobs(t, lk, rep, prefix)
		lk.Close()
		if t.Failed() {
			t.Fatalf("kill %d: verify on the killed child's host found the above", k)
		}
		mu.Lock()
		pgfaultCommitted(t, pg, committed)
		mu.Unlock()
	}
	pgfaultCheckHosts(t, hosts)
	t.Logf("%d kills, %d committed entries survived and verify stayed clean", kills, len(committed))
}
