//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/publish"
)

// benchGatedLedger is BenchmarkGate's ledger after one gate recorded its
// verdict, which fails a check there (as in BenchmarkGate): re-deriving a
// failed verdict runs the same decision as a passed one.
func benchGatedLedger(b *testing.B) string {
	ldir, p := benchGateLedger(b)
	if v, err := runGate(context.Background(), gateOptions{Dir: ldir, Policy: p}, io.Discard); v == nil {
		b.Fatal(err)
	}
	return ldir
}

// benchLoop runs op b.N times and reports its CPU time per op beside the
// wall time: on a shared machine it is the steadier figure.
func benchLoop(b *testing.B, op func() error) {
	before, n := benchCPU(b), 0
	b.ResetTimer()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric((benchCPU(b)-before)/float64(n), "cpu-s/op")
}

// BenchmarkReportCheck times rlgate report --check of a report written
// from BenchmarkGate's ledger: a checked view as of the report's head, the
// verdict re-derived (its whole decision run again), the report built
// again and compared byte for byte. Issue target: under 1.5 s.
func BenchmarkReportCheck(b *testing.B) {
	ldir := benchGatedLedger(b)
	out := filepath.Join(b.TempDir(), "report")
	if _, err := runReport(context.Background(), reportOptions{Dir: ldir, Out: out}, io.Discard); err != nil {
		b.Fatal(err)
	}
	benchLoop(b, func() error {
		var errOut bytes.Buffer
		if code := run(context.Background(), []string{"rlgate", "--ledger", ldir, "report", "--check", out}, io.Discard, &errOut); code != exitOK {
			return errors.New(errOut.String())
		}
		return nil
	})
}

// BenchmarkPublishDecision times rlgate publish up to its decision on
// BenchmarkGate's ledger: the checked view, the latest verdict for the rl
// model re-derived, and the refusal that follows, since that verdict
// failed (a passing one goes on to copy and sign the checkpoint, which
// takes time in proportion to its size). Issue target for the
// re-derivation: under 1.5 s.
func BenchmarkPublishDecision(b *testing.B) {
	ldir := benchGatedLedger(b)
	key := filepath.Join(b.TempDir(), "k")
	if _, err := publish.GenerateKey(key); err != nil {
		b.Fatal(err)
	}
	to := filepath.Join(b.TempDir(), "bundle")
	benchLoop(b, func() error {
		l, err := ledger.Open(context.Background(), ldir)
		if err != nil {
			return err
		}
		defer l.Close()
		if _, err := publish.Publish(context.Background(), l, publish.Options{Run: "train-rl", To: to, Key: key}); !errors.Is(err, publish.ErrNotGated) {
			return fmt.Errorf("publish: %v, want a refusal after re-deriving the failed verdict", err)
		}
		return nil
	})
}
