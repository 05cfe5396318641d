package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/reports"
)

// reportCounts is what a model table states of one model in one group,
// and of its pair with the baseline.
type reportCounts struct{ N, Correct, B, C int }

// TestReportBIRDGroups: a report of two BIRD gradings (GPT-4 and Mixtral
// predictions, graded by rlgate grade: buildBirdGraded) breaks the model
// table down by difficulty and by database, and every count in it (tasks,
// correct, and the discordant b and c against the baseline) is the one the
// official BIRD evaluator's verdicts give, joined with mini_dev's
// difficulty and db_id. Without a gate verdict the report supports
// nothing.
func TestReportBIRDGroups(t *testing.T) {
	t.Parallel()
	x := buildBirdGraded(t)
	ldir, bird := x.ledger, birdDir
	out := reportWrite(t, ldir, "--runs", "base="+x.mixtral.Run+",rl="+x.gpt4.Run)

	// Expected: the official verdicts, by mini_dev's difficulty and db_id.
	raw, err := os.ReadFile(bird + "/mini_dev_sqlite.json")
	if err != nil {
		t.Fatal(err)
	}
	var dev []struct {
		DBID       string `json:"db_id"`
		Difficulty string `json:"difficulty"`
	}
	if err := json.Unmarshal(raw, &dev); err != nil {
		t.Fatal(err)
	}
	official := map[string]map[string]bool{} // label -> index -> correct
	for label, file := range map[string]string{"base": "mixtral-8x7b", "rl": "gpt-4"} {
		official[label] = reportOfficialVerdicts(t, bird+"/predictions/"+file+".official-verdicts.tsv")
	}
	want := map[string]map[string]reportCounts{} // "group value" -> label -> counts
	for idx, rlRight := range official["rl"] {
		baseRight := official["base"][idx]
		var i int
		if err := json.Unmarshal([]byte(idx), &i); err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{"all ", "difficulty " + dev[i].Difficulty, "database " + dev[i].DBID} {
			if want[g] == nil {
				want[g] = map[string]reportCounts{}
			}
			b, r := want[g]["base"], want[g]["rl"]
			b.N, r.N = b.N+1, r.N+1
			if baseRight {
				b.Correct++
			}
			if rlRight {
				r.Correct++
			}
			if rlRight && !baseRight {
				r.B++
			}
			if baseRight && !rlRight {
				r.C++
			}
			want[g]["base"], want[g]["rl"] = b, r
		}
	}

	raw, err = os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reports.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]reportCounts{}
	for _, tb := range r.Tables {
		g := tb.Group + " " + tb.Value
		got[g] = map[string]reportCounts{}
		for _, m := range tb.Rows {
			c := reportCounts{N: m.N, Correct: m.Correct}
			if m.Pair != nil {
				c.B, c.C = m.Pair.B, m.Pair.C
			}
			got[g][m.Label] = c
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("model tables (-official +report):\n%s", diff)
	}
	if len(want) != 1+3+3 {
		t.Errorf("%d groups, want all, 3 difficulties and 3 databases", len(want))
	}
	if !strings.HasPrefix(r.Headline, "UNSUPPORTED: no gate verdict") || r.Supported || len(r.Budget) != 0 {
		t.Errorf("headline %q, supported %v, %d budget rows (a grading of predictions has no rollout)", r.Headline, r.Supported, len(r.Budget))
	}
	if code, stdout, errOut := rlgate(t, "--ledger", ldir, "report", "--check", out); code != exitOK {
		t.Errorf("check: exit %d:\n%s%s", code, stdout, errOut)
	}
}

// reportOfficialVerdicts reads an official-verdicts TSV (index,
// question_id, db_id, verdict) into index -> correct.
func reportOfficialVerdicts(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n")[1:] {
		f := strings.Split(line, "\t")
		out[f[0]] = f[3] == "1"
	}
	return out
}
