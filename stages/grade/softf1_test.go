package grade

import (
	"testing"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

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
