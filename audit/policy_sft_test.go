package audit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPolicyRefusesRepeatedEvaluations: under the runs a policy names, a
// claim over the same two evaluations as an earlier claim (rl > noupdate
// when the No-update control's evaluation is the SFT model's) or over one
// evaluation twice is refused, naming the claims and the runs.
func TestPolicyRefusesRepeatedEvaluations(t *testing.T) {
	runs := func(noupdate, base string) []LabeledRun {
		return []LabeledRun{{LabelBase, base}, {LabelSFT, "ev-sft"}, {LabelRL, "ev-rl"}, {LabelNoUpdate, noupdate}}
	}
	for _, c := range []struct {
		name           string
		noupdate, base string
		extra          []Claim
		want           string // "" for none
	}{
		{"own evaluations", "ev-noupdate", "ev-base", nil, ""},
		{"noupdate is sft's evaluation", "ev-sft", "ev-base", nil, "claims: rl > noupdate compares the same two evaluations as rl > sft (ev-rl and ev-sft)"},
		{"base is sft's evaluation", "ev-noupdate", "ev-sft", nil, "claims: sft > base compares evaluation ev-sft with itself"},
		{"the same evaluations on a group of tasks", "ev-noupdate", "ev-base", []Claim{{Better: "rl", Than: "sft", On: "hard+extra"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := PaperGradeSFT()
			p.Claims = append(p.Claims, c.extra...)
			p.Subjects.Runs = runs(c.noupdate, c.base)
			err := p.Check()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Check() = %v, want %q", err, c.want)
			}
		})
	}
}

// TestPaperGradeSFTSource: the built-in policy for RL after SFT reads back
// from its own text as itself, its name is reserved for it, and
// paper-grade keeps its claims.
func TestPaperGradeSFTSource(t *testing.T) {
	p, err := ParsePolicy(PaperGradeSFTName, PaperGradeSFTSource())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(PaperGradeSFT(), p, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("parsed text (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Claim{{Better: "rl", Than: "sft"}, {Better: "rl", Than: "noupdate"}, {Better: "sft", Than: "base"}}, p.Claims); d != "" {
		t.Errorf("claims (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Claim{{Better: "rl", Than: "base"}, {Better: "rl", Than: "noupdate"}, {Better: "sft", Than: "base"}}, PaperGrade().Claims); d != "" {
		t.Errorf("paper-grade's claims (-want +got):\n%s", d)
	}
	if _, err := ParsePolicy("mine.yaml", []byte("name: paper-grade-sft\n")); err == nil || !strings.Contains(err.Error(), "is the built-in policy's") {
		t.Errorf("a file named paper-grade-sft: %v, want refused as the built-in policy's name", err)
	}
}
