// Package ledgertest gives tests a fresh ledger that is verified when the
// test ends, so every test that writes to a ledger also checks its integrity.
package ledgertest

import (
	"context"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// New creates a ledger in a temporary directory. When the test ends it runs
// Verify and fails the test on any error finding, then closes the ledger.
func New(t testing.TB) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Init(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Check(t, l); l.Close() })
	return l
}

// Check runs Verify on l and fails the test on any error finding.
func Check(t testing.TB, l *ledger.Ledger) *ledger.VerifyReport {
	t.Helper()
	rep, err := l.Verify(context.Background(), ledger.VerifyOptions{})
	if err != nil {
		t.Fatalf("verify %s: %v", l.Dir(), err)
	}
	if !rep.OK() {
		for _, f := range rep.Findings {
			t.Errorf("verify %s: %s", l.Dir(), f)
		}
	}
	return rep
}
