package audit

import (
	"context"
	"strconv"
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
// saying every output is identical; it fails, saying why, with no entry,
// with one that differs (naming the output and where), once the stage has
// run again, and for a stage the ledger does not have.
func TestReproducedChecks(t *testing.T) {
	ctx := context.Background()
	l, dir := ledgertest.New(t), t.TempDir()
	stage := func(run string) {
		t.Helper()
		res, err := runner.Execute(ctx, l, runner.Spec{Stage: "rl2", Run: run, Argv: []string{"true"}, Dir: dir})
		if err != nil || res.Status != records.StatusOK {
			t.Fatalf("run %s: %v %+v", run, err, res)
		}
	}
	reproduce := func(b runner.Reproduction) int64 {
		t.Helper()
		es, err := l.Append(ctx, ledger.Record{Kind: records.KindReproduce, Body: b})
		if err != nil {
			t.Fatal(err)
		}
		return es[0].Seq
	}
	check := func() GateCheck {
		t.Helper()
		cs, err := reproducedChecks(ctx, l, []string{"rl2"})
		if err != nil || len(cs) != 1 {
			t.Fatalf("%v %+v", err, cs)
		}
		return cs[0]
	}
	stage("rl2-a")
	if c := check(); c.OK || !strings.Contains(c.Message, "rl2-a, the stage's latest that ended ok, has no reproduce entry") {
		t.Errorf("no reproduction: %+v", c)
	}
	good := reproduce(runner.Reproduction{Original: "rl2-a", Stage: "rl2", Run: "reproduce.rl2-x", Reproduced: true,
		Outputs: []runner.ReproducedOutput{{Name: "ckpt", Verdict: runner.OutputIdentical}}})
	if diff := cmp.Diff(GateCheck{Name: "reproduced rl2", OK: true, Message: "run rl2-a reproduced as reproduce.rl2-x, every output identical (entry " + itoa(good) + ")", Seqs: []int64{good}}, check()); diff != "" {
		t.Errorf("reproduced (-want +got):\n%s", diff)
	}
	bad := reproduce(runner.Reproduction{Original: "rl2-a", Stage: "rl2", Run: "reproduce.rl2-y",
		Outputs: []runner.ReproducedOutput{{Name: "ckpt", Verdict: runner.OutputIdentical}, {Name: "model", Verdict: runner.OutputDiffers, At: "tensor w: max |Δ| 1, 1 of 6 elements differ"}}})
	if c := check(); c.OK || c.Message != "run rl2-a did not reproduce (entry "+itoa(bad)+"): output model differs at tensor w: max |Δ| 1, 1 of 6 elements differ" {
		t.Errorf("the latest reproduction differs: %+v", c)
	}
	reproduce(runner.Reproduction{Original: "rl2-a", Stage: "rl2", Run: "reproduce.rl2-z", Reproduced: true})
	stage("rl2-b")
	if c := check(); c.OK || !strings.Contains(c.Message, "rl2-b, the stage's latest that ended ok, has no reproduce entry") {
		t.Errorf("a reproduction of an older run: %+v", c)
	}
	cs, err := reproducedChecks(ctx, l, []string{"rl3"})
	if err != nil || len(cs) != 1 || cs[0].OK || !strings.Contains(cs[0].Message, `"rl3" is neither a run nor a stage`) {
		t.Errorf("a stage the ledger lacks: %v %+v", err, cs)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
