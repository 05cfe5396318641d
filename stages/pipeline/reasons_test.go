package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestReproFirstRun: a stage never run reads "first run", one whose only
// run failed "never run successfully".
func TestReproFirstRun(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "rlgate.yaml")
	if err := os.WriteFile(pf, []byte("stages:\n  a:\n    cmd: [\"false\"]\n    gpu: off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	l := ledgertest.New(t)
	reasons := func(o Options) []string {
		t.Helper()
		ds, err := Repro(ctx, l, f, nil, o)
		if err != nil || len(ds) != 1 {
			t.Fatalf("repro: %v, %+v", err, ds)
		}
		return ds[0].Reasons
	}
	if diff := cmp.Diff([]string{"first run"}, reasons(Options{DryRun: true})); diff != "" {
		t.Errorf("before any run (-want +got):\n%s", diff)
	}
	reasons(Options{}) // runs a, which fails
	if diff := cmp.Diff([]string{"never run successfully"}, reasons(Options{DryRun: true})); diff != "" {
		t.Errorf("after a failed run (-want +got):\n%s", diff)
	}
}
