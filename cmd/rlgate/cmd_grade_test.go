package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/data"
)

// birdGraded is the offline evaluation flow a user runs, through the real
// commands: BIRD mini-dev imported (data import --json), and its two
// official baselines graded in one grade --json command, which shares the
// gold cache between them. Grading Mixtral's predictions takes seconds of
// SQLite, and TestImportGradeCompare and TestReportBIRDGroups both read
// the gradings, so the test binary builds it once (as buildGateExperiment
// does) and hands each caller a fork of its ledger.
type birdGraded struct {
	ledger        string // the caller's fork
	data          string // the imported tasks, shared by every fork
	imported      data.Imported
	gpt4, mixtral gradedFile // grade --json, in the order the command was given them
}

var (
	birdOnce     sync.Once
	birdTemplate *birdGraded
)

const birdDir = "../../testdata/bird"

// buildBirdGraded returns a fork of the BIRD gradings, built on the first
// call.
func buildBirdGraded(t *testing.T) *birdGraded {
	t.Helper()
	birdOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlgate-bird-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		atBinaryEnd(func() { os.RemoveAll(dir) })
		birdTemplate = birdGrade(t, dir)
	})
	if birdTemplate == nil {
		t.Fatal("the BIRD gradings failed to build in an earlier test; see its failure")
	}
	x := *birdTemplate
	x.ledger = filepath.Join(t.TempDir(), "ledger")
	if err := os.CopyFS(x.ledger, os.DirFS(birdTemplate.ledger)); err != nil {
		t.Fatal(err)
	}
	return &x
}

// birdGrade imports BIRD mini-dev and grades both baselines under dir.
func birdGrade(t *testing.T, dir string) *birdGraded {
	t.Helper()
	x := &birdGraded{ledger: filepath.Join(dir, "ledger"), data: filepath.Join(dir, "bird")}
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "init"); code != 0 {
		t.Fatal(errOut)
	}
	code, stdout, errOut := rlgate(t, "--ledger", x.ledger, "data", "import", "bird", "--dev", birdDir+"/mini_dev_sqlite.json", "--db-root", birdDir+"/dev_databases",
		"--out", x.data, "--json")
	if code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	if err := json.Unmarshal([]byte(stdout), &x.imported); err != nil {
		t.Fatalf("import --json: %v: %s", err, stdout)
	}
	code, stdout, errOut = rlgate(t, "--ledger", x.ledger, "grade", "--predictions", birdDir+"/predictions/gpt-4.json", "--predictions", birdDir+"/predictions/mixtral-8x7b.json",
		"--format", "bird-json", "--tasks", x.data, "--metric", "bird", "--json")
	if code != 0 {
		t.Fatalf("grade: %s", errOut)
	}
	var list []gradedFile
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("grade --json: %d summaries, %v", len(list), err)
	}
	x.gpt4, x.mixtral = list[0], list[1]
	return x
}

// TestImportGradeCompare runs the offline evaluation flow a user runs:
// import BIRD mini-dev, grade the two official baselines in one command
// (buildBirdGraded), compare them.
func TestImportGradeCompare(t *testing.T) {
	x := buildBirdGraded(t)
	dir := t.TempDir()
	t.Setenv(ledger.EnvLedger, x.ledger)
	if imp := x.imported; imp.Tasks.Count != 140 || len(imp.Skipped) != 360 || imp.Seq == 0 {
		t.Fatalf("import summary %+v", imp)
	}

	// Both official baselines in one command: a --json list of two
	// summaries, in order.
	one := x.gpt4
	if one.Correct != 83 || one.Total != 140 || len(one.Items) != 140 || one.ByDifficulty["simple"].Total != 40 || one.Run == x.mixtral.Run {
		t.Errorf("grade --json: %d/%d, %d items, %+v, runs %s and %s", one.Correct, one.Total, len(one.Items), one.ByDifficulty, one.Run, x.mixtral.Run)
	}
	if it := one.Items[0]; it.TaskID != fmt.Sprintf("bird-%04d", it.Index) || it.DBID == "" {
		t.Errorf("first item %+v", it)
	}

	// A second system for the comparison: the gold queries themselves as
	// predictions (jsonl format), which must score 140/140.
	var dev []struct {
		SQL string `json:"SQL"`
	}
	raw, _ := os.ReadFile(birdDir + "/mini_dev_sqlite.json")
	json.Unmarshal(raw, &dev)
	var lines []string
	for i, q := range dev {
		b, _ := json.Marshal(map[string]any{"index": i, "sql": q.SQL})
		lines = append(lines, string(b))
	}
	oracle := filepath.Join(dir, "oracle.jsonl")
	os.WriteFile(oracle, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	code, stdout, errOut := rlgate(t, "grade", "--predictions", oracle, "--format", "jsonl", "--tasks", x.data, "--metric", "bird", "--run", "eval-oracle")
	if code != 0 || !strings.Contains(stdout, "execution accuracy 100.00% (140/140)") {
		t.Fatalf("grade oracle: exit %d\n%s%s", code, stdout, errOut)
	}

	code, stdout, errOut = rlgate(t, "compare", "--runs", "gpt4="+one.Run+",oracle=eval-oracle", "--json")
	if code != 0 {
		t.Fatalf("compare: %s", errOut)
	}
	var cmp struct {
		Pairs []struct {
			B, C  int
			Delta float64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &cmp); err != nil || len(cmp.Pairs) != 1 || cmp.Pairs[0].B != 140-83 || cmp.Pairs[0].C != 0 {
		t.Errorf("compare %+v, %v", cmp, err)
	}
	compareByDifficulty(t, x.gpt4, x.mixtral)
	if code, out, _ := rlgate(t, "verify"); code != 0 {
		t.Errorf("verify after the flow: %s", out)
	}
}

// gradedFile is the part of a grade --json summary these tests read.
type gradedFile struct {
	Run            string
	Correct, Total int
	ByDifficulty   map[string]struct{ Correct, Total int } `json:"by_difficulty"`
	Items          []struct {
		Index      int    `json:"index"`
		TaskID     string `json:"task_id"`
		DBID       string `json:"db_id"`
		Difficulty string `json:"difficulty"`
		Correct    bool   `json:"correct"`
	} `json:"items"`
}

// compareByDifficulty checks that compare breaks the paired outcomes of
// the gradings of the two official BIRD baselines down by BIRD's
// difficulty levels, as the two gradings' items count them, in text and
// in --json.
func compareByDifficulty(t *testing.T, gpt4, mixtral gradedFile) {
	t.Helper()
	// Expected: counted from the items the two gradings printed.
	want := map[string]*audit.DifficultyRow{}
	var order []string
	for i, a := range gpt4.Items {
		b := mixtral.Items[i]
		if a.TaskID != b.TaskID || a.Difficulty != b.Difficulty || a.Difficulty == "" {
			t.Fatalf("item %d: %+v and %+v", i, a, b)
		}
		r := want[a.Difficulty]
		if r == nil {
			r = &audit.DifficultyRow{Difficulty: a.Difficulty, Correct: map[string]int{"gpt4": 0, "mixtral": 0},
				Pairs: []audit.DifficultyDelta{{Label: "mixtral", Baseline: "gpt4"}}}
			want[a.Difficulty] = r
			order = append(order, a.Difficulty)
		}
		r.Tasks++
		switch {
		case a.Correct && !b.Correct:
			r.Pairs[0].C++
		case b.Correct && !a.Correct:
			r.Pairs[0].B++
		}
		for label, ok := range map[string]bool{"gpt4": a.Correct, "mixtral": b.Correct} {
			if ok {
				r.Correct[label]++
			}
		}
	}
	var wantRows []audit.DifficultyRow
	for _, d := range []string{"simple", "moderate", "challenging"} {
		r := want[d]
		r.Pairs[0].Delta = float64(r.Correct["mixtral"]-r.Correct["gpt4"]) / float64(r.Tasks)
		wantRows = append(wantRows, *r)
	}
	if len(order) != 3 {
		t.Fatalf("levels %v, want BIRD's three", order)
	}
	runs := "gpt4=" + gpt4.Run + ",mixtral=" + mixtral.Run
	code, stdout, errOut := rlgate(t, "compare", "--runs", runs, "--json")
	var c audit.Comparison
	if err := json.Unmarshal([]byte(stdout), &c); code != 0 || err != nil {
		t.Fatalf("compare --json: exit %d, %v: %s", code, err, errOut)
	}
	if diff := cmp.Diff(wantRows, c.ByDifficulty, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("compare --json by difficulty (-want +got):\n%s", diff)
	}
	code, stdout, errOut = rlgate(t, "compare", "--runs", runs)
	if code != 0 || !strings.Contains(stdout, "by difficulty (b, c and Δ against gpt4):") {
		t.Fatalf("compare: exit %d:\n%s%s", code, stdout, errOut)
	}
	for _, r := range wantRows {
		p := r.Pairs[0]
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^.*%s\W+%d\W+%d\W+%d\W+%d\W+%d\W+%s\W*$`, r.Difficulty, r.Tasks, r.Correct["gpt4"], r.Correct["mixtral"], p.B, p.C, regexp.QuoteMeta(fmt.Sprintf("%+.4f", p.Delta))))
		if !row.MatchString(stdout) {
			t.Errorf("compare: no row %s %d %d %d %d %d %+.4f in\n%s", r.Difficulty, r.Tasks, r.Correct["gpt4"], r.Correct["mixtral"], p.B, p.C, p.Delta, stdout)
		}
	}
}

func TestGradeBadPredictions(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	rlgate(t, "init")
	spider := "../../testdata/spider"
	out := filepath.Join(dir, "spider")
	if code, _, errOut := rlgate(t, "data", "import", "spider", "--dev", spider+"/dev.json", "--gold", spider+"/dev_gold.sql", "--db-root", spider+"/database", "--out", out); code != 0 {
		t.Fatal(errOut)
	}
	// The BIRD file has 500 predictions; Spider dev has 1034 questions.
	code, _, errOut := rlgate(t, "grade", "--predictions", "../../testdata/bird/predictions/gpt-4.json", "--format", "bird-json", "--tasks", out, "--metric", "spider")
	if code != exitError || !strings.Contains(errOut, "500 predictions for 1034 gold queries") {
		t.Errorf("wrong count: exit %d, %q", code, errOut)
	}
	if code, _, _ := rlgate(t, "grade", "--predictions", "x", "--format", "spider-txt", "--tasks", out, "--metric", "exact"); code != exitUsage {
		t.Errorf("unknown metric: exit %d", code)
	}
	// Nothing half-written: the failed grade left no run behind.
	code, stdout, _ := rlgate(t, "log", "--kind", "run.start", "--json")
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a failed grade left entries: %s", stdout)
	}
}

// TestGradeRefusesDefectiveBirdFileUnlessLenient: a value the official
// reader would silently turn into a query on "financial" is an error naming
// its key and line, unless --lenient asks for the official reading.
func TestGradeRefusesDefectiveBirdFileUnlessLenient(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	rlgate(t, "init")
	bird := "../../testdata/bird"
	out := filepath.Join(dir, "bird")
	if code, _, errOut := rlgate(t, "data", "import", "bird", "--dev", bird+"/mini_dev_sqlite.json", "--db-root", bird+"/dev_databases", "--out", out); code != 0 {
		t.Fatal(errOut)
	}
	// Key "7" loses its separator; everything else stays as written.
	raw, _ := os.ReadFile(bird + "/predictions/gpt-4.json")
	re := regexp.MustCompile(`"7": "(?:[^"\\]|\\.)*"`)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, re.ReplaceAll(raw, []byte(`"7": "SELECT 1"`)), 0o644)
	code, _, errOut := rlgate(t, "grade", "--predictions", broken, "--format", "bird-json", "--tasks", out, "--metric", "bird")
	if code != exitError || !strings.Contains(errOut, `key "7" (line`) || !strings.Contains(errOut, "--lenient") {
		t.Errorf("defective file: exit %d, %q", code, errOut)
	}
	code, stdout, errOut := rlgate(t, "grade", "--predictions", broken, "--format", "bird-json", "--tasks", out, "--metric", "bird", "--lenient", "--json")
	if code != 0 || !strings.Contains(stdout, `no single bird separator`) {
		t.Errorf("--lenient: exit %d, %s", code, errOut)
	}
}
