package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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
// mini-dev baselines (one command, one gold cache, two --predictions)
// writes with --json, for each file, every item's Soft-F1 as
// evaluation_f1.py gives it bit for bit (the TSV holds Python's repr,
// which reads back exactly, and --json writes Go's shortest form, which
// does too), as correct the evaluation_ex.py verdict, and as the score
// their mean in percent. The command is run on the 48 questions of
// student_club, imported as their own dataset as a split by database is:
// the grading of all 140 items against the official files is
// stages/grade's TestBirdMatchesOfficialVerdicts.
func TestBirdSoftF1ThroughCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	files := []string{"gpt-4", "mixtral-8x7b"}
	out, orig, preds := birdSplit(t, ldir, dir, "student_club", files)
	args := []string{"--ledger", ldir, "grade", "--format", "bird-json", "--tasks", out, "--metric", "bird-softf1", "--json"}
	for _, p := range preds {
		args = append(args, "--predictions", p)
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
	for i, f := range files {
		t.Run(f, func(t *testing.T) {
			path := gradeTruthBird + "/predictions/" + f
			// Columns j, index, question_id, db_id, softf1: keyed by j.
			byJ := officialColumn(t, path+".official-softf1.tsv", 4)
			index := officialColumn(t, path+".official-softf1.tsv", 1)
			ex := officialColumn(t, path+".official-verdicts.tsv", 3)
			official := map[int]float64{}
			for j := 0; j < len(byJ); j++ {
				k, _ := strconv.Atoi(index[j])
				v, err := strconv.ParseFloat(byJ[j], 64)
				if err != nil {
					t.Fatal(err)
				}
				official[k] = v
			}
			want, gotF1, wantEX, gotEX := map[int]float64{}, map[int]float64{}, map[int]bool{}, map[int]bool{}
			sum := 0.0
			for k, o := range orig { // in source order, as evaluation_f1.py sums
				want[k], wantEX[k] = official[o], ex[o] == "1"
				sum += official[o]
			}
			for _, it := range got[i].Items {
				if it.Score == nil {
					t.Fatalf("item %d has no score", it.Index)
				}
				gotF1[it.Index], gotEX[it.Index] = *it.Score, it.Correct
			}
			if len(want) != 48 {
				t.Fatalf("%d official values, want 48", len(want))
			}
			if d := cmp.Diff(want, gotF1); d != "" {
				t.Errorf("Soft-F1 differs from evaluation_f1.py (-official +ours):\n%s", d)
			}
			if d := cmp.Diff(wantEX, gotEX); d != "" {
				t.Errorf("correct is not evaluation_ex.py's verdict (-official +ours):\n%s", d)
			}
			if s := got[i].Score; s == nil || *s != sum/48*100 {
				t.Errorf("summary score %v, want %v", s, sum/48*100)
			}
		})
	}
}

// birdSplit imports the BIRD mini-dev questions on database db as their
// own dataset into the ledger at ldir, with each named predictions file
// cut to them, as a split by database does. It returns the dataset, each
// question's index in mini-dev by its index in the split, and the cut
// predictions files in the order of files.
func birdSplit(t *testing.T, ldir, dir, db string, files []string) (string, []int, []string) {
	t.Helper()
	raw, err := os.ReadFile(gradeTruthBird + "/mini_dev_sqlite.json")
	if err != nil {
		t.Fatal(err)
	}
	var dev []json.RawMessage
	if err := json.Unmarshal(raw, &dev); err != nil {
		t.Fatal(err)
	}
	var keep []json.RawMessage
	var orig []int
	for i, q := range dev {
		var item struct {
			DBID string `json:"db_id"`
		}
		if err := json.Unmarshal(q, &item); err != nil {
			t.Fatal(err)
		}
		if item.DBID == db {
			keep, orig = append(keep, q), append(orig, i)
		}
	}
	write := func(name string, v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	devPath := write("dev-"+db+".json", keep)
	var preds []string
	for _, f := range files {
		raw, err := os.ReadFile(gradeTruthBird + "/predictions/" + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var all map[string]string
		if err := json.Unmarshal(raw, &all); err != nil {
			t.Fatal(err)
		}
		// Keyed by position in order, as the BIRD baselines are (a map
		// would marshal "10" before "2").
		cut := bytes.NewBufferString("{")
		for k, o := range orig {
			v, err := json.Marshal(all[strconv.Itoa(o)])
			if err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				cut.WriteString(", ")
			}
			fmt.Fprintf(cut, "%q: %s", strconv.Itoa(k), v)
		}
		cut.WriteString("}")
		preds = append(preds, write(f+".json", json.RawMessage(cut.Bytes())))
	}
	out := filepath.Join(dir, db)
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "import", "bird", "--dev", devPath, "--db-root", gradeTruthBird+"/dev_databases", "--out", out); code != exitOK {
		t.Fatal(errOut)
	}
	return out, orig, preds
}
