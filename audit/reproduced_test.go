package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/runner"
)

// TestReproducedChecks: a policy's reproduced stage passes only while the
// stage's latest run that ended ok has, as its latest reproduce entry, one
// saying every output is identical and borne out by the runs' own records;
// it fails, saying why, with no entry, with one that differs (naming the
// output and where), with one whose reproduction run is not in the ledger
// or whose digests are not the runs' outputs (a forged entry), once the
// stage has run again, and for a stage the ledger does not have.
func TestReproducedChecks(t *testing.T) {
	ctx := context.Background()
	l, dir := ledgertest.New(t), t.TempDir()
	// stage runs a stage writing out.txt, its one output.
	stage := func(stage, run, text string) ledger.Digest {
		t.Helper()
		res, err := runner.Execute(ctx, l, runner.Spec{Stage: stage, Run: run, Dir: dir,
			Argv: []string{"sh", "-c", "printf " + text + " > out.txt"}, Outputs: []runner.Named{{Name: "out", Path: filepath.Join(dir, "out.txt")}}})
		if err != nil || res.Status != records.StatusOK {
			t.Fatalf("run %s: %v %+v", run, err, res)
		}
		d, err := outputDigests(ctx, l, run)
		if err != nil {
			t.Fatal(err)
		}
		return d["out"]
	}
	reproduce := func(run string, ok bool, outs ...runner.ReproducedOutput) int64 {
		t.Helper()
		es, err := l.Append(ctx, ledger.Record{Kind: records.KindReproduce, Body: runner.Reproduction{Original: "rl2-a", Stage: "rl2", Run: run, Reproduced: ok, Outputs: outs}})
		if err != nil {
			t.Fatal(err)
		}
		return es[0].Seq
	}
	identical := func(d ledger.Digest) runner.ReproducedOutput {
		return runner.ReproducedOutput{Name: "out", Verdict: runner.OutputIdentical, Recorded: &d, Reproduced: &d}
	}
	check := func() GateCheck {
		t.Helper()
		cs, err := reproducedChecks(ctx, l, []string{"rl2"})
		if err != nil || len(cs) != 1 {
			t.Fatalf("%v %+v", err, cs)
		}
		return cs[0]
	}
	d := stage("rl2", "rl2-a", "weights")
	if c := check(); c.OK || !strings.Contains(c.Message, "rl2-a, the stage's latest that ended ok, has no reproduce entry") {
		t.Errorf("no reproduction: %+v", c)
	}
	if again := stage("reproduce.rl2", "reproduce.rl2-x", "weights"); again != d {
		t.Fatalf("the same bytes, another digest: %s %s", d, again)
	}
	good := reproduce("reproduce.rl2-x", true, identical(d))
	if diff := cmp.Diff(GateCheck{Name: "reproduced rl2", OK: true, Message: fmt.Sprintf("run rl2-a reproduced as reproduce.rl2-x, every output identical (entry %d)", good), Seqs: []int64{good}}, check()); diff != "" {
		t.Errorf("reproduced (-want +got):\n%s", diff)
	}
	bad := reproduce("reproduce.rl2-y", false, identical(d), runner.ReproducedOutput{Name: "model", Verdict: runner.OutputDiffers, At: "tensor w: max |Δ| 1, 1 of 6 elements differ"})
	if c := check(); c.OK || c.Message != fmt.Sprintf("run rl2-a did not reproduce (entry %d): output model differs at tensor w: max |Δ| 1, 1 of 6 elements differ", bad) {
		t.Errorf("the latest reproduction differs: %+v", c)
	}
	forged := reproduce("reproduce.rl2-z", true, identical(d))
	if c := check(); c.OK || c.Message != fmt.Sprintf(`run rl2-a: reproduce entry %d says it reproduced, but its run "reproduce.rl2-z" is not in the ledger`, forged) {
		t.Errorf("a reproduction run that never ran: %+v", c)
	}
	other := stage("reproduce.rl2", "reproduce.rl2-w", "other-weights")
	forged = reproduce("reproduce.rl2-w", true, identical(d))
	if c := check(); c.OK || c.Message != fmt.Sprintf("run rl2-a: reproduce entry %d says it reproduced, but output out is %s in run rl2-a and %s in run reproduce.rl2-w", forged, d, other) {
		t.Errorf("digests the runs do not hold: %+v", c)
	}
	reproduce("reproduce.rl2-x", true, identical(d))
	stage("rl2", "rl2-b", "weights")
	if c := check(); c.OK || !strings.Contains(c.Message, "rl2-b, the stage's latest that ended ok, has no reproduce entry") {
		t.Errorf("a reproduction of an older run: %+v", c)
	}
	cs, err := reproducedChecks(ctx, l, []string{"rl3"})
	if err != nil || len(cs) != 1 || cs[0].OK || !strings.Contains(cs[0].Message, `"rl3" is neither a run nor a stage`) {
		t.Errorf("a stage the ledger lacks: %v %+v", err, cs)
	}
}
