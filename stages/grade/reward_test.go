package grade

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestSoftF1(t *testing.T) {
	tests := []struct {
		name       string
		pred, gold Denotation
		want       float64
	}{
		{"equal", den("", row(i(1)), row(i(2))), den("", row(i(1)), row(i(2))), 1},
		{"both empty", den(""), den(""), 1},
		{"half the rows", den("", row(i(1))), den("", row(i(1)), row(i(2))), 2.0 / 3},
		{"extra rows", den("", row(i(1)), row(i(3)), row(i(4))), den("", row(i(1))), 0.5},
		{"python equality", den("", row(f(1))), den("", row(i(1))), 1},
		{"bags", den("", row(i(1)), row(i(1))), den("", row(i(1))), 2.0 / 3},
		{"disjoint", den("", row(i(1))), den("", row(i(2))), 0},
		{"empty against rows", den(""), den("", row(i(1))), 0},
		{"pred failed", Denotation{Err: errors.New("x")}, den(""), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SoftF1(tt.pred, tt.gold); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("SoftF1 = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBigramOverlap(t *testing.T) {
	tests := []struct {
		name, pred, gold string
		want             float64
	}{
		{"identical", "SELECT a FROM t", "SELECT a FROM t", 1},
		{"case and space", "select  A\nfrom T", "SELECT a FROM t", 1},
		{"comments ignored", "SELECT a /* x */ FROM t -- y", "SELECT a FROM t", 1},
		{"quoted identifiers unquoted", `SELECT "a" FROM [t]`, "SELECT a FROM t", 1},
		{"half", "SELECT a FROM t", "SELECT b FROM t", 1.0 / 3},
		{"nothing shared", "SELECT a", "DROP t", 0},
		{"both single tokens, equal", "x", "X", 1},
		{"empty against query", "", "SELECT a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BigramOverlap(tt.pred, tt.gold); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("BigramOverlap = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReward(t *testing.T) {
	g := newTestGrader(t, Options{})
	w := Weights{Execution: 1, SoftF1: 0.5, BirdSoftF1: 0.25, Format: 0.1, Parses: 0.1, SchemaJaccard: 0.2, Bigram: 0.3}
	tests := []struct {
		name string
		in   RewardInput
		want Reward // components only
	}{
		{
			name: "correct",
			in:   RewardInput{Metric: MetricBird, PredSQL: "SELECT name FROM Dogs WHERE age > 8", GoldSQL: "SELECT name FROM Dogs WHERE age > 8", WellFormed: true},
			want: Reward{Execution: 1, SoftF1: 1, BirdSoftF1: 1, Format: 1, Parses: 1, SchemaJaccard: 1, Bigram: 1},
		},
		{
			// The same three rows in reverse order: a set match and a bag
			// F1 of 1, but BIRD's Soft-F1 pairs row i with row i and
			// matches only the middle one: tp 1, fp 2, fn 2.
			name: "rows in another order",
			in:   RewardInput{Metric: MetricBird, PredSQL: "SELECT name FROM Dogs WHERE dog_id <= 3 ORDER BY dog_id DESC", GoldSQL: "SELECT name FROM Dogs WHERE dog_id <= 3 ORDER BY dog_id", WellFormed: true},
			want: Reward{Execution: 1, SoftF1: 1, BirdSoftF1: 2 * (1.0 / 3) * (1.0 / 3) / (1.0/3 + 1.0/3), Format: 1, Parses: 1, SchemaJaccard: 1, Bigram: 2 * 10.0 / (11 + 10)},
		},
		{
			// pred names Dogs, name, dog_id; gold names Dogs, name, age:
			// 2 items of 4. Bigrams: 4 of 7 on each side.
			name: "partly right",
			in:   RewardInput{Metric: MetricBird, PredSQL: "SELECT name FROM Dogs WHERE dog_id = 1", GoldSQL: "SELECT name FROM Dogs WHERE dog_id = 2", WellFormed: true},
			want: Reward{Format: 1, Parses: 1, SchemaJaccard: 1, Bigram: 2 * 6.0 / (7 + 7)},
		},
		{
			name: "right rows among others",
			in:   RewardInput{Metric: MetricBird, PredSQL: "SELECT name FROM Dogs WHERE dog_id <= 3", GoldSQL: "SELECT name FROM Dogs WHERE age = '6'", WellFormed: true},
			// BIRD's Soft-F1: the gold row is the first predicted one; fp 2.
			want: Reward{SoftF1: 2 * 1.0 / (3 + 1), BirdSoftF1: 2 * (1.0 / 3) / (1.0/3 + 1), Format: 1, Parses: 1, SchemaJaccard: 2.0 / 4, Bigram: 2 * 4.0 / (7 + 7)},
		},
		{
			name: "does not compile",
			in:   RewardInput{Metric: MetricSpider, PredSQL: "SELECT nme FROM Dogs", GoldSQL: "SELECT name FROM Dogs"},
			want: Reward{SchemaJaccard: 1.0 / 2, Bigram: 2 * 1.0 / (3 + 3)},
		},
		{
			name: "no answer",
			in:   RewardInput{Metric: MetricBird, GoldSQL: "SELECT name FROM Dogs"},
			want: Reward{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.DBPath = dogKennels
			r, err := g.Reward(context.Background(), tt.in, w)
			if err != nil {
				t.Fatal(err)
			}
			got := [7]float64{r.Execution, r.SoftF1, r.Format, r.Parses, r.SchemaJaccard, r.Bigram, r.BirdSoftF1}
			want := [7]float64{tt.want.Execution, tt.want.SoftF1, tt.want.Format, tt.want.Parses, tt.want.SchemaJaccard, tt.want.Bigram, tt.want.BirdSoftF1}
			for k := range got {
				if math.Abs(got[k]-want[k]) > 1e-12 {
					t.Errorf("components %v, want %v", got, want)
					break
				}
			}
			total := w.Execution*got[0] + w.SoftF1*got[1] + w.Format*got[2] + w.Parses*got[3] + w.SchemaJaccard*got[4] + w.Bigram*got[5] + w.BirdSoftF1*got[6]
			if math.Abs(r.Total-total) > 1e-12 || r.Weights != w {
				t.Errorf("total %v with weights %+v, want %v", r.Total, r.Weights, total)
			}
		})
	}
}
