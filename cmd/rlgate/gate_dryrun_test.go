package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gateDryRun: gate --dry-run reaches the same verdict as the gate and
// leaves the ledger as it found it: the same head and the same bytes in
// ledger.db, so it can run on a ledger its user cannot write.
func gateDryRun(t *testing.T, x *gateExperiment) {
	_, head, _ := rlgate(t, "--ledger", x.ledger, "head")
	db := filepath.Join(x.ledger, "ledger.db")
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	code, v := x.gate(t, "--dry-run")
	if code != exitOK || !v.OK || v.Seq != 0 {
		t.Fatalf("dry run: exit %d, ok %v, verdict entry %d, failed %v", code, v.OK, v.Seq, failedChecks(v))
	}
	for _, a := range v.Audits {
		if a.Seq != 0 {
			t.Errorf("dry run recorded audit %s as entry %d", a.Audit, a.Seq)
		}
	}
	_, after, _ := rlgate(t, "--ledger", x.ledger, "head")
	if diff := cmp.Diff(head, after); diff != "" {
		t.Errorf("dry run moved the head (-before +after):\n%s", diff)
	}
	if now, err := os.ReadFile(db); err != nil || string(now) != string(before) {
		t.Errorf("dry run changed ledger.db (%v)", err)
	}
	// The real gate then records what the dry run decided.
	code, real := x.gate(t)
	if code != exitOK || real.Seq == 0 || len(real.Checks) != len(v.Checks) {
		t.Errorf("gate after the dry run: exit %d, entry %d, %d checks (dry run: %d)", code, real.Seq, len(real.Checks), len(v.Checks))
	}
}
