package grade

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

const (
	spiderDir = "../../testdata/spider"
	birdDir   = "../../testdata/bird"
)

// goldItem is one line of a gold file: "SQL<TAB>db_id".
type goldItem struct {
	SQL, DB string
}

// readGold reads a gold file as the official evaluators do (line
// trimmed, split at the tab).
func readGold(t testing.TB, path string) []goldItem {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var items []goldItem
	s := bufio.NewScanner(f)
	for s.Scan() {
		sql, db, ok := strings.Cut(strings.TrimSpace(s.Text()), "\t")
		if !ok {
			t.Fatalf("%s: line %d has no tab", path, len(items)+1)
		}
		items = append(items, goldItem{sql, db})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return items
}

func readPredictionsFile(t testing.TB, path, format string, goldCount int) []Prediction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	preds, warns, err := ReadPredictions(f, format, goldCount)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Logf("%s: %d warnings, first %+v", path, len(warns), warns[0])
	}
	return preds
}

// gradeAll grades every item with a database present, GOMAXPROCS at a
// time, and returns the outcomes by index (nil where skipped).
func gradeAll(t testing.TB, g *Grader, m Metric, dbRoot string, gold []goldItem, preds []Prediction) []*Outcome {
	t.Helper()
	out := make([]*Outcome, len(gold))
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				o, err := g.Grade(context.Background(), m, dbPath(dbRoot, gold[i].DB), preds[i].SQL, gold[i].SQL)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[i] = &o
				mu.Unlock()
			}
		}()
	}
	for i := range gold {
		if _, err := os.Stat(dbPath(dbRoot, gold[i].DB)); err == nil {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return out
}

func dbPath(root, db string) string { return filepath.Join(root, db, db+".sqlite") }

// TestSpiderAgreesWithOfficialVerdicts grades DAIL-SQL + GPT-4 on Spider
// dev with the spider metric and requires the official test-suite verdict
// on every item whose database is present (all but wta_1's 62).
func TestSpiderAgreesWithOfficialVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 972 Spider items")
	}
	gold := readGold(t, filepath.Join(spiderDir, "dev_gold.sql"))
	preds := readPredictionsFile(t, filepath.Join(spiderDir, "predictions/dail-sql-gpt4.txt"), FormatSpiderTxt, len(gold))

	f, err := os.Open(filepath.Join(spiderDir, "predictions/dail-sql-gpt4.official-verdicts.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts := map[int]string{}
	s := bufio.NewScanner(f)
	s.Scan() // header: index db_id exec_match
	for s.Scan() {
		var i int
		var db, v string
		if _, err := fmt.Sscanf(s.Text(), "%d\t%s\t%s", &i, &db, &v); err != nil || db != gold[i].DB {
			t.Fatalf("verdict line %q: %v", s.Text(), err)
		}
		verdicts[i] = v
	}

	g := NewGrader(Options{}, nil)
	defer g.Close()
	outcomes := gradeAll(t, g, MetricSpider, filepath.Join(spiderDir, "database"), gold, preds)
	var agree, correct, graded int
	var disagreements []string
	for i, o := range outcomes {
		v := verdicts[i]
		if o == nil {
			if v != "NA" {
				t.Errorf("item %d (%s) skipped but has verdict %s", i, gold[i].DB, v)
			}
			continue
		}
		graded++
		if o.Verdict == VerdictGoldDefect {
			t.Errorf("item %d: gold defect: %s", i, o.Detail)
		}
		if o.Correct {
			correct++
		}
		if (v == "1") == o.Correct {
			agree++
			continue
		}
		disagreements = append(disagreements, fmt.Sprintf("item %d (%s): official %s, ours %s (%s)\n  pred: %s\n  gold: %s",
			i, gold[i].DB, v, o.Verdict, o.Detail, preds[i].SQL, gold[i].SQL))
	}
	t.Logf("spider: %d/%d agree with the official verdicts; %d correct", agree, graded, correct)
	if graded != 972 {
		t.Errorf("graded %d items, want 972", graded)
	}
	if len(disagreements) > 0 {
		t.Errorf("%d disagreements:\n%s", len(disagreements), strings.Join(disagreements, "\n"))
	}
}

// TestBirdMatchesOfficialTotals grades the BIRD mini-dev baselines on the
// 140 items whose database is present with the bird metric; the official
// evaluation_ex.py gives GPT-4 83 and Mixtral-8x7B 36 of them.
func TestBirdMatchesOfficialTotals(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 280 BIRD items")
	}
	gold := readGold(t, filepath.Join(birdDir, "mini_dev_sqlite_gold.sql"))
	var meta []struct {
		DBID       string `json:"db_id"`
		Difficulty string `json:"difficulty"`
	}
	b, err := os.ReadFile(filepath.Join(birdDir, "mini_dev_sqlite.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	g := NewGrader(Options{}, nil)
	defer g.Close()
	for _, tt := range []struct {
		file string
		want int
	}{
		{"gpt-4.json", 83},
		{"mixtral-8x7b.json", 36},
	} {
		t.Run(tt.file, func(t *testing.T) {
			preds := readPredictionsFile(t, filepath.Join(birdDir, "predictions", tt.file), FormatBirdJSON, len(gold))
			outcomes := gradeAll(t, g, MetricBird, filepath.Join(birdDir, "dev_databases"), gold, preds)
			var correct, graded int
			byDifficulty := map[string][2]int{}
			var lines []string
			for i, o := range outcomes {
				if o == nil {
					continue
				}
				graded++
				c := byDifficulty[meta[i].Difficulty]
				c[1]++
				if o.Correct {
					correct++
					c[0]++
				}
				byDifficulty[meta[i].Difficulty] = c
				lines = append(lines, fmt.Sprintf("%d %s %s %s", i, meta[i].DBID, o.Verdict, o.Detail))
			}
			t.Logf("bird %s: %d/%d correct; by difficulty %v", tt.file, correct, graded, byDifficulty)
			if graded != 140 || correct != tt.want {
				t.Errorf("%d/%d correct, want %d/140; per item:\n%s", correct, graded, tt.want, strings.Join(lines, "\n"))
			}
		})
	}
}
