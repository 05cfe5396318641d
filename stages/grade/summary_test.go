package grade

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// TestSummaryJSONKeepsEveryField: the --json of rlgate grade (a list of
// file summaries) and eval (a trajectory summary beside the rollout's) is
// a contract. The lists below are the fields each printed before the two
// summaries became one type (FileSummary's and TrajectorySummary's tags
// at 51d9247, less the omitempty ones, which a value may leave out); every
// one must still be printed, whatever is added.
func TestSummaryJSONKeepsEveryField(t *testing.T) {
	grade := []string{"correct", "database_check", "dataset", "end_seq", "ex", "gold_defects", "items", "metric", "predictions",
		"predictions_digest", "run", "skipped", "start_seq", "total", "warnings"}
	eval := []string{"allow_incomplete", "correct", "dataset", "end_seq", "ex", "gold_defects", "incomplete", "items", "metric", "mode",
		"rollout", "run", "start_seq", "total", "unfinished_episodes"}
	// As GradeFile and GradeTrajectories fill them, with every value that
	// may be zero left zero.
	file := FileSummary{Run: "r", Metric: MetricBird, Predictions: "p.json", PredDigest: ledger.Sum([]byte("p")), Warnings: []Warning{}}
	traj := TrajectorySummary{Run: "r.bird-greedy", Rollout: "r", Metric: MetricBird, Mode: "greedy", Warnings: []Warning{}}
	for _, tt := range []struct {
		name string
		v    any
		want []string
	}{{"grade", file, grade}, {"eval", traj, eval}} {
		raw, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, f := range tt.want {
			if _, ok := fields[f]; !ok {
				missing = append(missing, f)
			}
		}
		if diff := cmp.Diff([]string(nil), missing); diff != "" {
			t.Errorf("%s --json lost fields (-want +missing):\n%s\n%s", tt.name, diff, raw)
		}
	}
}
