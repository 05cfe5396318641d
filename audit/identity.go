package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/rollout"
)

// CheckEvaluatedIsBase passes when the model identity the base evaluation
// served is the checkpoint training started from.
const CheckEvaluatedIsBase = "evaluated-is-base"

// EvaluatedIdentity is the evidence of an evaluated-is-trained or
// evaluated-is-base finding: the model identity the rollout recorded and
// where it came from (rollout.IdentityServer or IdentityAsserted; empty
// with no identity).
type EvaluatedIdentity struct {
	Identity *ledger.Digest `json:"identity,omitempty"`
	Source   string         `json:"source,omitempty"`
}

// Identity checks, from the checkpoint artifacts the stage runs recorded
// (their model identities and tensor manifests) and the identities the
// evaluations recorded: each evaluation served the model its label names
// (rl, sft, noupdate: the training run's output; base: the input training
// started from); the No-update control's output has every tensor digest
// of its input, which is where the RL stage started (the sft run's output
// when the rl model descends from it, else the base); and the
// trained run's output differs from its input. Each evaluation's finding
// says whether its identity was reported by the endpoint or only asserted
// by the user: an asserted identity that matches passes, since servers
// other than rlgate's (vLLM, SGLang) report none and cannot be held to
// it, but the finding, and so the gate's output and the report, shows
// that nothing confirmed it. Only digests are compared:
// the element rule of rlgate audit weights needs the tensor bytes, which
// the ledger does not hold.
func Identity(ctx context.Context, l *ledger.Ledger, s Subjects) (*Report, error) {
	r := newReport(AuditIdentity, s)
	evals, trains, err := loadSubjects(ctx, l, s)
	if err != nil {
		return nil, err
	}
	if len(trains) == 0 {
		return nil, fmt.Errorf("audit identity: name the training runs (train)")
	}
	type ckpt struct {
		what string
		a    *trainArtifact
	}
	// base: the input of the trained run, else of any run; and where the
	// sft run started when the trained run descends from the sft run's
	// output through stages in between (SFT, then RL in two stages).
	var base ckpt
	for _, t := range append([]*trainRun{trainByLabel(trains, LabelRL)}, trains...) {
		if t != nil && base.a == nil {
			if a := t.checkpoint(records.RoleInput, "base"); a != nil {
				base = ckpt{fmt.Sprintf("the input %s of training %s", a.Name, t.Run), a}
			}
		}
	}
	// rlInput: where the RL stage started, which the No-update control
	// must start from too: the sft run's output when the rl model descends
	// from it (SFT, then RL), else the base.
	rlInput := base
	if sft := trainByLabel(trains, LabelSFT); sft != nil && base.a != nil {
		descends, err := descendsFrom(ctx, l, base.a, sft.Run)
		if err != nil {
			return nil, err
		}
		if a := sft.checkpoint(records.RoleInput, "base"); a != nil && descends {
			base = ckpt{fmt.Sprintf("the input %s of training %s, where the rl model's lineage starts", a.Name, sft.Run), a}
		}
		if a := sft.checkpoint(records.RoleOutput, "ckpt"); a != nil && descends {
			rlInput = ckpt{fmt.Sprintf("the output %s of training %s, where the RL stage started", a.Name, sft.Run), a}
		}
	}
	expected := map[string]ckpt{LabelBase: base}
	for _, t := range trains {
		if a := t.checkpoint(records.RoleOutput, "ckpt"); a != nil {
			expected[t.Label] = ckpt{fmt.Sprintf("the output %s of training %s", a.Name, t.Run), a}
		}
	}

	for _, e := range evals {
		want, ok := expected[e.Label]
		if !ok || want.a == nil {
			continue
		}
		check := CheckEvaluatedIsTrained
		if e.Label == LabelBase {
			check = CheckEvaluatedIsBase
		}
		seqs := []int64{e.rolloutRun.StartedSeq, want.a.Seq}
		got := e.rollout.ModelIdentity
		ev := EvaluatedIdentity{Identity: got, Source: e.rollout.Source()}
		said := map[string]string{rollout.IdentityServer: "reported by the endpoint",
			rollout.IdentityAsserted: "asserted with --model-identity, not confirmed by the endpoint"}[ev.Source]
		switch {
		case got == nil:
			r.fail(check, ev, seqs, "%s: rollout %s recorded no model identity, so the evaluated model cannot be tied to %s. Try: rlgate eval --model-identity blake3:... (rlgate ckpt digest prints it)",
				e.Label, e.grade.Rollout, want.what)
		case *got != want.a.Digest:
			msg := fmt.Sprintf("%s: rollout %s served model %s (%s), not %s (%s)", e.Label, e.grade.Rollout, got, said, want.what, want.a.Digest)
			for label, c := range expected {
				if c.a != nil && label != e.Label && c.a.Digest == *got {
					msg += "; it is " + c.what
					seqs = append(seqs, c.a.Seq)
					break
				}
			}
			r.fail(check, ev, seqs, "%s", msg)
		default:
			r.pass(check, ev, seqs, "%s: rollout %s served %s (%s), %s", e.Label, e.grade.Rollout, got, said, want.what)
		}
	}

	for _, t := range trains {
		in, out := t.checkpoint(records.RoleInput, "base"), t.checkpoint(records.RoleOutput, "ckpt")
		check := CheckTrainedChanged
		if t.Label == LabelNoUpdate {
			check = CheckNoUpdateIdentical
		}
		if in == nil || out == nil {
			r.fail(check, nil, []int64{t.run.StartedSeq}, "%s: stage run %s recorded no checkpoint %s. Try: rlgate run --in base=CKPT --out ckpt=DIR",
				t.Label, t.Run, map[bool]string{true: "input", false: "output"}[in == nil])
			continue
		}
		seqs := []int64{in.Seq, out.Seq}
		if t.Label != LabelNoUpdate {
			if in.Digest == out.Digest {
				r.fail(check, nil, seqs, "%s: stage run %s wrote the model it started from (%s): training changed no tensor", t.Label, t.Run, in.Digest)
			} else {
				r.pass(check, nil, seqs, "%s: stage run %s changed the model from %s to %s (digests; rlgate audit weights applies the element rule to the bytes)",
					t.Label, t.Run, in.Digest, out.Digest)
			}
			continue
		}
		if rlInput.a != nil && rlInput.a.Digest != in.Digest {
			msg := fmt.Sprintf("%s: the No-update control started from %s, not from %s (%s)", t.Label, in.Digest, rlInput.what, rlInput.a.Digest)
			if base.a != nil && base.a.Digest == in.Digest && base.a != rlInput.a {
				msg += "; it started from " + base.what + ". Try: start the No-update control from the RL stage's own input, with lr = 0"
			}
			r.fail(check, nil, append(seqs, rlInput.a.Seq), "%s", msg)
			continue
		}
		if in.Digest == out.Digest {
			r.pass(check, nil, seqs, "%s: the No-update control wrote the model it started from, %s, in every tensor digest", t.Label, in.Digest)
			continue
		}
		var diffs []TensorDifference
		if in.Manifest != nil && out.Manifest != nil {
			mi, err := readManifest(l, *in.Manifest)
			if err != nil {
				return nil, err
			}
			mo, err := readManifest(l, *out.Manifest)
			if err != nil {
				return nil, err
			}
			diffs = tensorDifferences(mi.Tensors, mo.Tensors)
		}
		names := make([]string, len(diffs))
		for i, d := range diffs {
			names[i] = d.Name
		}
		r.fail(check, NoUpdateEvidence{Differing: diffs}, seqs, "%s: the No-update control changed the weights: %s became %s; %d tensors differ: %s",
			t.Label, in.Digest, out.Digest, len(diffs), strings.Join(names, ", "))
	}
	return r, nil
}

// descendsFrom reports whether the checkpoint a was written by the stage
// run run, or by a stage run whose base checkpoint descends from it,
// following the lineage rlgate run recorded for each input.
func descendsFrom(ctx context.Context, l *ledger.Ledger, a *trainArtifact, run string) (bool, error) {
	seen := map[string]bool{}
	for a != nil && a.ProducedBy != nil && !seen[a.ProducedBy.Run] {
		if a.ProducedBy.Run == run {
			return true, nil
		}
		seen[a.ProducedBy.Run] = true
		up, err := loadTrains(ctx, l, []LabeledRun{{Run: a.ProducedBy.Run}})
		if err != nil {
			return false, err
		}
		a = up[0].checkpoint(records.RoleInput, "base")
	}
	return false, nil
}
