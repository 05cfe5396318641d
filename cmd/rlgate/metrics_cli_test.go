package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// officialColumn reads column col of an official per-item TSV (header
// skipped) by the item index in its first column.
func officialColumn(t *testing.T, path string, col int) map[int]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]string{}
	s := bufio.NewScanner(f)
	s.Scan()
	for s.Scan() {
		cols := strings.Split(s.Text(), "\t")
		i, err := strconv.Atoi(cols[0])
		if err != nil || len(cols) <= col {
			t.Fatalf("%s: line %q", path, s.Text())
		}
		out[i] = cols[col]
	}
	return out
}

// TestSpiderHardnessAndExactMatchThroughCLI: rlgate data import spider
// then rlgate grade --metric spider-em give, item by item on the 972
// items with a database, the official hardness and the official exact
// set match of the DAIL-SQL predictions (681 of 972), count the
// predictions the official parser rejects, and print EM per hardness.
func TestSpiderHardnessAndExactMatchThroughCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	if code, _, errOut := rlgate(t, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	sp := importInputsSpider
	out := filepath.Join(dir, "spider")
	if code, _, errOut := rlgate(t, "data", "import", "spider", "--dev", sp+"/dev.json", "--gold", sp+"/dev_gold.sql", "--db-root", sp+"/database", "--out", out); code != exitOK {
		t.Fatal(errOut)
	}
	code, stdout, errOut := rlgate(t, "grade", "--predictions", sp+"/predictions/dail-sql-gpt4.txt", "--format", "spider-txt", "--tasks", out, "--metric", "spider-em", "--json")
	var got []struct {
		Correct, Total, Unparsed int
		Items                    []struct {
			Index      int    `json:"index"`
			Correct    bool   `json:"correct"`
			Difficulty string `json:"difficulty"`
			Verdict    string `json:"verdict"`
			Error      string `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil || len(got) != 1 {
		t.Fatalf("grade --metric spider-em: exit %d, %v, %s", code, err, errOut)
	}
	s := got[0]
	hardness := officialColumn(t, sp+"/dev_hardness.official.tsv", 2)
	em := officialColumn(t, sp+"/predictions/dail-sql-gpt4.official-em.tsv", 3)
	wantH, gotH, wantEM, gotEM := map[int]string{}, map[int]string{}, map[int]string{}, map[int]string{}
	unparsed := 0
	for _, it := range s.Items {
		wantH[it.Index], gotH[it.Index] = hardness[it.Index], it.Difficulty
		wantEM[it.Index], gotEM[it.Index] = em[it.Index], map[bool]string{true: "1", false: "0"}[it.Correct]
		if it.Verdict == "pred-error" && strings.Contains(it.Error, "unparsable") {
			unparsed++
		}
	}
	if d := cmp.Diff(wantH, gotH); d != "" {
		t.Errorf("hardness differs from the official (-official +ours):\n%s", d)
	}
	if d := cmp.Diff(wantEM, gotEM); d != "" {
		t.Errorf("exact match differs from the official (-official +ours):\n%s", d)
	}
	if s.Correct != 681 || s.Total != 972 || s.Unparsed != unparsed || unparsed == 0 {
		t.Errorf("EM %d/%d, %d unparsed (items say %d); want 681/972 and the count of unparsable items", s.Correct, s.Total, s.Unparsed, unparsed)
	}
	code, stdout, _ = rlgate(t, "grade", "--predictions", sp+"/predictions/dail-sql-gpt4.txt", "--format", "spider-txt", "--tasks", out, "--metric", "spider-em")
	for _, want := range []string{"easy", "extra", "exact match accuracy 70.06% (681/972)", strconv.Itoa(unparsed) + " predictions the official parser cannot parse"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("grade output lacks %q:\n%s", want, stdout)
		}
	}
	// eval cannot grade by parses: it is refused before anything is played.
	code, _, errOut = rlgate(t, "eval", "--tasks", out, "--run", "em", "--endpoint", "http://127.0.0.1:1/v1", "--model", "m", "--metric", "spider-em")
	if code != exitUsage || !strings.Contains(errOut, "rlgate grade --metric spider-em") {
		t.Errorf("eval --metric spider-em: exit %d, %q; want a usage error pointing at rlgate grade", code, errOut)
	}
}

// TestBirdSoftF1ThroughCLI: rlgate grade --metric bird-softf1 on both BIRD
// mini-dev baselines (one command, one gold cache) gives every item the
// Soft-F1 of evaluation_f1.py bit for bit (the TSV holds Python's repr,
// which reads back exactly, and --json writes Go's shortest form, which
// does too), the official means, and as correct the evaluation_ex.py
// verdict.
func TestBirdSoftF1ThroughCLI(t *testing.T) {
	dir := t.TempDir()
	out, _ := gradeTruthImport(t, dir)
	files := []string{"gpt-4", "mixtral-8x7b"}
	args := []string{"grade", "--format", "bird-json", "--tasks", out, "--metric", "bird-softf1", "--json"}
	for _, f := range files {
		args = append(args, "--predictions", gradeTruthBird+"/predictions/"+f+".json")
	}
	code, stdout, errOut := rlgate(t, args...)
	var got []struct {
		Score *float64 `json:"score"`
		Items []struct {
			Index   int      `json:"index"`
			Correct bool     `json:"correct"`
			Score   *float64 `json:"score"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil || len(got) != 2 {
		t.Fatalf("grade --metric bird-softf1: exit %d, %v, %s", code, err, errOut)
	}
	for i, mean := range []float64{0.6461905034324944, 0.28019056456092506} {
		t.Run(files[i], func(t *testing.T) {
			path := gradeTruthBird + "/predictions/" + files[i]
			// Columns j, index, question_id, db_id, softf1: keyed by index.
			byJ := officialColumn(t, path+".official-softf1.tsv", 4)
			index := officialColumn(t, path+".official-softf1.tsv", 1)
			ex := officialColumn(t, path+".official-verdicts.tsv", 3)
			want, gotF1, wantEX, gotEX := map[int]float64{}, map[int]float64{}, map[int]bool{}, map[int]bool{}
			sum := 0.0
			for j := 0; j < len(byJ); j++ {
				k, _ := strconv.Atoi(index[j])
				v, err := strconv.ParseFloat(byJ[j], 64)
				if err != nil {
					t.Fatal(err)
				}
				want[k], wantEX[k] = v, ex[k] == "1"
				sum += v
			}
			for _, it := range got[i].Items {
				if it.Score == nil {
					t.Fatalf("item %d has no score", it.Index)
				}
				gotF1[it.Index], gotEX[it.Index] = *it.Score, it.Correct
			}
			if len(want) != 140 {
				t.Fatalf("%d official values, want 140", len(want))
			}
			if d := cmp.Diff(want, gotF1); d != "" {
				t.Errorf("Soft-F1 differs from evaluation_f1.py (-official +ours):\n%s", d)
			}
			if d := cmp.Diff(wantEX, gotEX); d != "" {
				t.Errorf("correct is not evaluation_ex.py's verdict (-official +ours):\n%s", d)
			}
			if s := got[i].Score; sum/140 != mean || s == nil || *s != sum/140*100 {
				t.Errorf("mean %v, summary %v; want %v", sum/140, s, mean)
			}
		})
	}
}
