package audit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyInPipeline: training runs named by a stage become that stage's
// run; run ids and evaluations stay as written.
func TestPolicyInPipeline(t *testing.T) {
	p := PaperGrade()
	p.Subjects = Subjects{
		Runs:  []LabeledRun{{"rl", "rl2"}, {"base", "eval-base.spider-greedy"}},
		Train: []LabeledRun{{"rl", "rl2"}, {"noupdate", "lr0-20261201T000000-ab12"}},
	}
	got := p.InPipeline(map[string]string{"rl2": "rl2-20261201T001500-0f0f", "sft": "sft-x"})
	want := Subjects{
		Runs:  []LabeledRun{{"rl", "rl2"}, {"base", "eval-base.spider-greedy"}},
		Train: []LabeledRun{{"rl", "rl2-20261201T001500-0f0f"}, {"noupdate", "lr0-20261201T000000-ab12"}},
	}
	if d := cmp.Diff(want, got.Subjects); d != "" {
		t.Errorf("subjects (-want +got):\n%s", d)
	}
	if p.Subjects.Train[0].Run != "rl2" {
		t.Error("InPipeline changed the policy it was called on")
	}
}
