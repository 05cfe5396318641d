package grade

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
)

const (
	spiderDir = "../../testdata/spider"
	birdDir   = "../../testdata/bird"
)

// importSpider and importBird import the shipped benchmarks the way
// `rlgate data import` does, into a temporary directory.
func importSpider(t testing.TB) string {
	t.Helper()
	im, err := dataset.ImportSpider(context.Background(), dataset.SpiderOptions{Dev: spiderDir + "/dev.json", Gold: spiderDir + "/dev_gold.sql", DBRoot: spiderDir + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := im.WriteDir(dir, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

func importBird(t testing.TB) string {
	t.Helper()
	im, err := dataset.ImportBird(context.Background(), dataset.BirdOptions{Dev: birdDir + "/mini_dev_sqlite.json", DBRoot: birdDir + "/dev_databases"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := im.WriteDir(dir, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// officialVerdicts reads an official evaluator's per-item verdicts, a TSV
// whose first column is the item's index in the source file and whose last
// is its verdict ("1", "0", or "NA" where the database is missing).
func officialVerdicts(t *testing.T, path string) map[int]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts := map[int]string{}
	s := bufio.NewScanner(f)
	s.Scan() // header
	for s.Scan() {
		cols := strings.Split(s.Text(), "\t")
		i, err := strconv.Atoi(cols[0])
		if err != nil || len(cols) < 2 {
			t.Fatalf("%s: verdict line %q: want an index and a verdict", path, s.Text())
		}
		verdicts[i] = cols[len(cols)-1]
	}
	return verdicts
}

// disagreements lists the graded items whose verdict is not the official one.
func disagreements(items []Item, official map[int]string) []string {
	var out []string
	for _, it := range items {
		if (official[it.Index] == "1") != it.Correct {
			out = append(out, fmt.Sprintf("item %d (%s): official %s, ours %s (%s)", it.Index, it.DBID, official[it.Index], it.Verdict, it.Error))
		}
	}
	return out
}

// TestSpiderAgreesWithOfficialVerdicts grades DAIL-SQL + GPT-4 on Spider
// dev through the product path (import, GradeFile, ledger) with the spider
// metric and requires the official test-suite verdict on every item whose
// database is present (all but wta_1's 62).
func TestSpiderAgreesWithOfficialVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 972 Spider items")
	}
	l := ledgertest.New(t)
	g := NewGrader(Options{}, nil)
	defer g.Close()
	s, err := GradeFile(context.Background(), l, g, FileOptions{Predictions: spiderDir + "/predictions/dail-sql-gpt4.txt", Format: FormatSpiderTxt, Dataset: importSpider(t), Metric: MetricSpider})
	if err != nil {
		t.Fatal(err)
	}
	checkStoredOutcomes(t, l, s)
	for _, it := range s.Items {
		if it.Verdict == VerdictGoldDefect {
			t.Errorf("item %d: gold defect: %s", it.Index, it.Error)
		}
	}
	diffs := disagreements(s.Items, officialVerdicts(t, filepath.Join(spiderDir, "predictions/dail-sql-gpt4.official-verdicts.tsv")))
	t.Logf("spider: %d/%d agree with the official verdicts; %d correct", s.Total-len(diffs), s.Total, s.Correct)
	if s.Total != 972 || s.Skipped != 62 {
		t.Errorf("graded %d items, skipped %d; want 972 and 62", s.Total, s.Skipped)
	}
	if len(diffs) > 0 {
		t.Errorf("%d disagreements:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
	rows, err := l.Outcomes(context.Background(), s.Run)
	if err != nil || len(rows) != 972 {
		t.Errorf("ledger holds %d outcomes for the run, %v", len(rows), err)
	}
}

// TestBirdMatchesOfficialVerdicts grades the BIRD mini-dev baselines on the
// 140 items whose database is present with the bird-softf1 metric, whose
// verdict is the bird rule's: the official evaluation_ex.py gives GPT-4 83
// and Mixtral-8x7B 36 of them, and every item must have its verdict and
// the Soft-F1 of evaluation_f1.py bit for bit (the TSV holds Python's repr,
// which reads back exactly), and the summary the official mean. GPT-4's
// grading also serves fragileRealBirdItems. One grader serves both files,
// so each gold query runs once. The two files grade at the same time: one
// slow Mixtral prediction would otherwise leave a core idle while it runs.
func TestBirdMatchesOfficialVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 280 BIRD items")
	}
	l := ledgertest.New(t)
	dir := importBird(t)
	cache := NewGoldCache()
	g := NewGrader(Options{}, cache)
	defer g.Close()
	t.Run("files", func(t *testing.T) { birdAgreement(t, l, g, dir) })
	if cache.Len() != 140 {
		t.Errorf("gold cache holds %d entries after two files, want 140 (each gold once)", cache.Len())
	}
}

// birdAgreement grades each BIRD baseline in its own parallel subtest.
func birdAgreement(t *testing.T, l *ledger.Ledger, g *Grader, dir string) {
	for _, tt := range []struct {
		file string
		want int
		mean float64 // evaluation_f1.py's mean Soft-F1
	}{
		{"gpt-4.json", 83, 0.6461905034324944},
		{"mixtral-8x7b.json", 36, 0.28019056456092506},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			s, err := GradeFile(context.Background(), l, g, FileOptions{Predictions: filepath.Join(birdDir, "predictions", tt.file), Format: FormatBirdJSON, Dataset: dir, Metric: MetricBirdSoftF1})
			if err != nil {
				t.Fatal(err)
			}
			checkStoredOutcomes(t, l, s)
			t.Logf("bird %s: %d/%d correct; by difficulty %+v", tt.file, s.Correct, s.Total, s.ByDifficulty)
			if s.Total != 140 || s.Correct != tt.want {
				t.Errorf("%d/%d correct, want %d/140", s.Correct, s.Total, tt.want)
			}
			official := officialVerdicts(t, filepath.Join(birdDir, "predictions", strings.TrimSuffix(tt.file, ".json")+".official-verdicts.tsv"))
			if len(official) != 140 {
				t.Fatalf("%d official verdicts, want 140", len(official))
			}
			if diffs := disagreements(s.Items, official); len(diffs) > 0 {
				t.Errorf("%d items disagree with evaluation_ex.py:\n%s", len(diffs), strings.Join(diffs, "\n"))
			}
			softF1(t, s, filepath.Join(birdDir, "predictions", strings.TrimSuffix(tt.file, ".json")+".official-softf1.tsv"), tt.mean)
			if tt.file == "gpt-4.json" {
				t.Run("fragile items 259 and 263", func(t *testing.T) { fragileRealBirdItems(t, s) })
			}
		})
	}
}

// softF1 checks each item's Soft-F1 in s against evaluation_f1.py's, a TSV
// of the columns j (the order the script summed in), index, question_id,
// db_id and softf1, and the summary's score against the official mean,
// which the TSV's values summed in its order must give exactly.
func softF1(t *testing.T, s *FileSummary, path string, mean float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[int]float64{}
	sum := 0.0
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 5 {
			t.Fatalf("%s: line %q: want j, index, question_id, db_id and softf1", path, sc.Text())
		}
		i, err := strconv.Atoi(cols[1])
		if err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		v, err := strconv.ParseFloat(cols[4], 64)
		if err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		want[i] = v
		sum += v
	}
	if len(want) != 140 || sum/140 != mean {
		t.Fatalf("%s: %d official values with mean %v, want 140 with mean %v", path, len(want), sum/140, mean)
	}
	for _, it := range s.Items {
		if it.Score == nil || *it.Score != want[it.Index] {
			t.Errorf("item %d: Soft-F1 %v, evaluation_f1.py %v", it.Index, it.Score, want[it.Index])
		}
	}
	if s.Score == nil || *s.Score != sum/140*100 {
		t.Errorf("summary score %v, want the official mean %v in percent", s.Score, mean)
	}
}
