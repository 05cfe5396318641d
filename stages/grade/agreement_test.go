package grade

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// officialSpiderVerdicts reads the official test-suite verdicts by index.
func officialSpiderVerdicts(t *testing.T) map[int]string {
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
		if _, err := fmt.Sscanf(s.Text(), "%d\t%s\t%s", &i, &db, &v); err != nil {
			t.Fatalf("verdict line %q: %v", s.Text(), err)
		}
		verdicts[i] = v
	}
	return verdicts
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
	verdicts := officialSpiderVerdicts(t)
	var disagreements []string
	for _, it := range s.Items {
		if it.Verdict == VerdictGoldDefect {
			t.Errorf("item %d: gold defect: %s", it.Index, it.Error)
		}
		if (verdicts[it.Index] == "1") != it.Correct {
			disagreements = append(disagreements, fmt.Sprintf("item %d (%s): official %s, ours %s (%s)", it.Index, it.DBID, verdicts[it.Index], it.Verdict, it.Error))
		}
	}
	t.Logf("spider: %d/%d agree with the official verdicts; %d correct", s.Total-len(disagreements), s.Total, s.Correct)
	if s.Total != 972 || s.Skipped != 62 {
		t.Errorf("graded %d items, skipped %d; want 972 and 62", s.Total, s.Skipped)
	}
	if len(disagreements) > 0 {
		t.Errorf("%d disagreements:\n%s", len(disagreements), strings.Join(disagreements, "\n"))
	}
	rows, err := l.Outcomes(context.Background(), s.Run)
	if err != nil || len(rows) != 972 {
		t.Errorf("ledger holds %d outcomes for the run, %v", len(rows), err)
	}
}

// TestBirdMatchesOfficialTotals grades the BIRD mini-dev baselines on the
// 140 items whose database is present with the bird metric; the official
// evaluation_ex.py gives GPT-4 83 and Mixtral-8x7B 36 of them. One grader
// serves both files, so each gold query runs once.
func TestBirdMatchesOfficialTotals(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 280 BIRD items")
	}
	l := ledgertest.New(t)
	dir := importBird(t)
	cache := NewGoldCache()
	g := NewGrader(Options{}, cache)
	defer g.Close()
	for _, tt := range []struct {
		file string
		want int
	}{
		{"gpt-4.json", 83},
		{"mixtral-8x7b.json", 36},
	} {
		t.Run(tt.file, func(t *testing.T) {
			s, err := GradeFile(context.Background(), l, g, FileOptions{Predictions: filepath.Join(birdDir, "predictions", tt.file), Format: FormatBirdJSON, Dataset: dir, Metric: MetricBird})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("bird %s: %d/%d correct; by difficulty %+v", tt.file, s.Correct, s.Total, s.ByDifficulty)
			if s.Total != 140 || s.Correct != tt.want {
				var lines []string
				for _, it := range s.Items {
					lines = append(lines, fmt.Sprintf("%d %s %s %s", it.Index, it.DBID, it.Verdict, it.Error))
				}
				t.Errorf("%d/%d correct, want %d/140; per item:\n%s", s.Correct, s.Total, tt.want, strings.Join(lines, "\n"))
			}
		})
	}
	if cache.Len() != 140 {
		t.Errorf("gold cache holds %d entries after two files, want 140 (each gold once)", cache.Len())
	}
}
