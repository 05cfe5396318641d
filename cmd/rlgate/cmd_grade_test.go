package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// TestImportGradeCompare runs the offline evaluation flow a user runs:
// import BIRD mini-dev, grade the two official baselines in one command,
// compare them.
func TestImportGradeCompare(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	if code, _, errOut := rlgate(t, "init"); code != 0 {
		t.Fatal(errOut)
	}
	bird := "../../testdata/bird"
	out := filepath.Join(dir, "bird")
	code, stdout, errOut := rlgate(t, "data", "import", "bird", "--dev", bird+"/mini_dev_sqlite.json", "--db-root", bird+"/dev_databases", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	var imp dataImportSummary
	if err := json.Unmarshal([]byte(stdout), &imp); err != nil || imp.Tasks.Count != 140 || len(imp.Skipped) != 360 || imp.Seq == 0 {
		t.Fatalf("import summary %+v, %v", imp, err)
	}

	code, stdout, errOut = rlgate(t, "grade", "--predictions", bird+"/predictions/gpt-4.json", "--format", "bird-json",
		"--tasks", out, "--metric", "bird", "--run", "eval-gpt4", "--json")
	if code != 0 {
		t.Fatalf("grade: %s", errOut)
	}
	var list []struct {
		Correct, Total int
		ByDifficulty   map[string]struct{ Correct, Total int } `json:"by_difficulty"`
		Items          []struct {
			Index   int    `json:"index"`
			TaskID  string `json:"task_id"`
			DBID    string `json:"db_id"`
			Correct bool   `json:"correct"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("grade --json: %d summaries, %v", len(list), err)
	}
	one := list[0]
	if one.Correct != 83 || one.Total != 140 || len(one.Items) != 140 || one.ByDifficulty["simple"].Total != 40 {
		t.Errorf("grade --json: %d/%d, %d items, %+v", one.Correct, one.Total, len(one.Items), one.ByDifficulty)
	}
	if it := one.Items[0]; it.TaskID != fmt.Sprintf("bird-%04d", it.Index) || it.DBID == "" {
		t.Errorf("first item %+v", it)
	}

	// A second system for the comparison: the gold queries themselves as
	// predictions (jsonl format), which must score 140/140.
	var dev []struct {
		SQL string `json:"SQL"`
	}
	raw, _ := os.ReadFile(bird + "/mini_dev_sqlite.json")
	json.Unmarshal(raw, &dev)
	var lines []string
	for i, q := range dev {
		b, _ := json.Marshal(map[string]any{"index": i, "sql": q.SQL})
		lines = append(lines, string(b))
	}
	oracle := filepath.Join(dir, "oracle.jsonl")
	os.WriteFile(oracle, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	code, stdout, errOut = rlgate(t, "grade", "--predictions", oracle, "--format", "jsonl", "--tasks", out, "--metric", "bird", "--run", "eval-oracle")
	if code != 0 || !strings.Contains(stdout, "execution accuracy 100.00% (140/140)") {
		t.Fatalf("grade oracle: exit %d\n%s%s", code, stdout, errOut)
	}

	code, stdout, errOut = rlgate(t, "compare", "--runs", "gpt4=eval-gpt4,oracle=eval-oracle", "--json")
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
	if code, out, _ := rlgate(t, "verify"); code != 0 {
		t.Errorf("verify after the flow: %s", out)
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
