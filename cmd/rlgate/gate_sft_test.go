package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stats"
)

// TestGateRLAfterSFT: with RL from the SFT model, the No-update control
// mirrors the RL stage. Started from SFT with lr = 0, the gate passes
// under the built-in policy for that lineage (rl > sft, rl > noupdate,
// sft > base); started from Base, only noupdate-identical fails, naming
// the input it should have started from.
func TestGateRLAfterSFT(t *testing.T) {
	t.Parallel()
	x := buildGateExperiment(t)
	gateTrain(t, x.ledger, x.dir, "train-rl-sft", "rl", x.written["sft"], x.trainData["rl"], x.written["rl"], "1e-6", 0.25, "--param", "lr=1e-6")
	gateTrain(t, x.ledger, x.dir, "train-noupdate-sft", "noupdate", x.written["sft"], x.trainData["rl"], x.written["sft"], "0", 0.25, "--param", "lr=0")
	x.train = gateSetLabel(x.train, "rl", "train-rl-sft")

	t.Run("No-update from SFT passes", func(t *testing.T) {
		y := x.fork(t)
		y.train = gateSetLabel(y.train, "noupdate", "train-noupdate-sft")
		y.evalRun(t, "noupdate", "ev-noupdate-sft", y.data, y.identity["sft"])
		code, v := y.gate(t)
		if code != exitOK || !v.OK {
			t.Fatalf("exit %d, failed %v", code, failedChecks(v))
		}
		var claims []string
		for _, c := range v.Claims {
			claims = append(claims, c.Claim)
		}
		if d := cmp.Diff([]string{"rl > sft", "rl > noupdate", "sft > base"}, claims); d != "" || v.Policy.Name != audit.PaperGradeSFTName {
			t.Errorf("policy %s, claims (-want +got):\n%s", v.Policy.Name, d)
		}
		// lr = 0 left the SFT model as it was, so rl > noupdate is
		// rl > sft's test again: stated as such, with its figures, and
		// not a third member of the Holm family.
		sft, noupdate, base := v.Claims[0], v.Claims[1], v.Claims[2]
		if noupdate.Repeats != "rl > sft" || noupdate.Seq != sft.Seq || noupdate.HolmP != sft.HolmP || !noupdate.OK {
			t.Errorf("rl > noupdate: repeats %q, comparison %d (rl > sft's %d), Holm p %g (rl > sft's %g), ok %v",
				noupdate.Repeats, noupdate.Seq, sft.Seq, noupdate.HolmP, sft.HolmP, noupdate.OK)
		}
		holm, err := stats.Holm([]float64{sft.ExactP, base.ExactP}, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(holm.Adjusted, []float64{sft.HolmP, base.HolmP}); d != "" {
			t.Errorf("Holm p over rl > sft and sft > base (-want +got):\n%s", d)
		}
		i := slices.IndexFunc(v.Checks, func(c audit.GateCheck) bool { return c.Name == "claim rl > noupdate" })
		if msg := v.Checks[i].Message; !strings.Contains(msg, "the same test as claim rl > sft (noupdate and sft evaluated the same model)") {
			t.Errorf("the check does not say whose test it repeats: %s", msg)
		}
	})
	t.Run("No-update from Base fails naming it", func(t *testing.T) {
		y := x.fork(t)
		code, v := y.gate(t)
		if d := cmp.Diff([]string{"audit identity: noupdate-identical"}, failedChecks(v)); code != exitCheckFailed || d != "" {
			t.Fatalf("exit %d, failed checks (-want +got):\n%s", code, d)
		}
		i := slices.IndexFunc(v.Checks, func(c audit.GateCheck) bool { return !c.OK })
		if msg := v.Checks[i].Message; !strings.Contains(msg, "not from the output ckpt of training train-sft, where the RL stage started") {
			t.Errorf("the finding does not name the RL stage's input: %s", msg)
		}
	})
}
