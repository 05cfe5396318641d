package grade

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// officialSoftF1 reads evaluation_f1.py's per-item Soft-F1 (columns j,
// index, question_id, db_id, softf1; the value is Python's repr of a
// float, which reads back exactly) by index in mini_dev_sqlite.json, and
// the indexes in file order.
func officialSoftF1(t *testing.T, path string) (map[int]float64, []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]float64{}
	var order []int
	s := bufio.NewScanner(f)
	s.Scan() // header
	for s.Scan() {
		cols := strings.Split(s.Text(), "\t")
		if len(cols) != 5 {
			t.Fatalf("%s: line %q: want 5 columns", path, s.Text())
		}
		i, err1 := strconv.Atoi(cols[1])
		v, err2 := strconv.ParseFloat(cols[4], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: line %q: %v %v", path, s.Text(), err1, err2)
		}
		out[i] = v
		order = append(order, i)
	}
	return out, order
}

// TestBirdSoftF1MatchesOfficial grades the BIRD mini-dev baselines under
// bird-softf1 through the product path and requires every item's Soft-F1
// to equal evaluation_f1.py's bit for bit, the mean over the 140 items to
// be the official mean, and each item's correct to be evaluation_ex.py's
// verdict.
func TestBirdSoftF1MatchesOfficial(t *testing.T) {
	if testing.Short() {
		t.Skip("grades 280 BIRD items")
	}
	l := ledgertest.New(t)
	dir := importBird(t)
	g := NewGrader(Options{}, nil)
	defer g.Close()
	for _, tt := range []struct {
		file string
		mean float64
	}{
		{"gpt-4", 0.6461905034324944},
		{"mixtral-8x7b", 0.28019056456092506},
	} {
		t.Run(tt.file, func(t *testing.T) {
			s, err := GradeFile(context.Background(), l, g, FileOptions{Predictions: filepath.Join(birdDir, "predictions", tt.file+".json"), Format: FormatBirdJSON, Dataset: dir, Metric: MetricBirdSoftF1})
			if err != nil {
				t.Fatal(err)
			}
			official, order := officialSoftF1(t, filepath.Join(birdDir, "predictions", tt.file+".official-softf1.tsv"))
			if len(official) != 140 || s.Total != 140 {
				t.Fatalf("%d official values, %d graded; want 140 each", len(official), s.Total)
			}
			got := map[int]float64{}
			for _, it := range s.Items {
				if it.Score == nil {
					t.Fatalf("item %d has no score", it.Index)
				}
				got[it.Index] = *it.Score
			}
			if d := cmp.Diff(official, got); d != "" {
				t.Errorf("Soft-F1 differs from evaluation_f1.py (-official +ours):\n%s", d)
			}
			sum := 0.0
			for _, i := range order {
				sum += got[i]
			}
			if mean := sum / float64(len(order)); mean != tt.mean || *s.Score != sum/float64(len(order))*100 {
				t.Errorf("mean Soft-F1 %v (summary %v%%), want %v", mean, *s.Score, tt.mean)
			}
			if diffs := disagreements(s.Items, officialVerdicts(t, filepath.Join(birdDir, "predictions", tt.file+".official-verdicts.tsv"))); len(diffs) > 0 {
				t.Errorf("correct is not the bird verdict:\n%s", strings.Join(diffs, "\n"))
			}
		})
	}
}

// TestBirdSoftF1Quirks: the official pairing of row i with row i, the
// de-duplication, the in-row membership test and the empty cases.
func TestBirdSoftF1Quirks(t *testing.T) {
	i := func(v int64) sqlenv.Cell { return sqlenv.Cell{Kind: sqlenv.KindInt, Int: v} }
	f := func(v float64) sqlenv.Cell { return sqlenv.Cell{Kind: sqlenv.KindReal, Real: v} }
	s := func(v string) sqlenv.Cell { return sqlenv.Cell{Kind: sqlenv.KindText, Str: v} }
	rows := func(rs ...[]sqlenv.Cell) Denotation { return Denotation{Rows: rs} }
	r := func(cs ...sqlenv.Cell) []sqlenv.Cell { return cs }
	for _, tt := range []struct {
		name       string
		pred, gold Denotation
		want       float64
	}{
		{"same rows, same order", rows(r(i(1)), r(i(2))), rows(r(i(1)), r(i(2))), 1},
		{"same rows, other order: 0", rows(r(i(2)), r(i(1))), rows(r(i(1)), r(i(2))), 0},
		{"duplicates dropped, first kept", rows(r(i(1)), r(i(1)), r(i(2))), rows(r(i(1)), r(i(2))), 1},
		{"1 == 1.0, column order ignored", rows(r(s("a"), f(1))), rows(r(i(1), s("a"))), 1},
		// tp = 1/2, fp = 1/2, fn = 1/2 + 1 (gold row 2 unmatched).
		{"half a row, a missing row", rows(r(i(1), i(9))), rows(r(i(1), i(2)), r(i(3), i(4))), 2 * 0.5 * (0.5 / 2) / (0.5 + 0.5/2)},
		// An extra predicted row adds 1 to fp.
		{"extra row", rows(r(i(1)), r(i(5))), rows(r(i(1))), 2 * 0.5 * 1 / (0.5 + 1)},
		{"both empty", rows(), rows(), 1},
		{"empty prediction", rows(), rows(r(i(1))), 0},
		{"failed prediction", Denotation{Err: ErrNoPrediction}, rows(), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := BirdSoftF1(tt.pred, tt.gold); got != tt.want {
				t.Errorf("BirdSoftF1 = %v, want %v", got, tt.want)
			}
		})
	}
}
