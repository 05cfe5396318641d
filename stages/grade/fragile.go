package grade

import (
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// fragileDigits is how many significant digits of a float two engines are
// taken to agree on. SQLite 3.43 changed how SUM and AVG add floats, and
// such changes move only the last digits of a result: an AVG that read
// 12.345678901234567 may read 12.345678901234568.
const fragileDigits = 12

// longFloat is how many significant digits make a float the result of
// inexact arithmetic rather than a stored or short decimal value: its
// last digits are the ones an engine may print differently.
const longFloat = 15

// fragile reports whether a verdict on pred and gold (as the metric sees
// them) rests on the last digits of a float, so that another SQLite, or
// another summation order, could flip it:
//   - a match between two different statements that holds because a long
//     float (longFloat significant digits or more) equals its counterpart
//     bit for bit: computed another way (SUM/COUNT for AVG, another join
//     order), its last digits may differ on another engine; the same
//     statement computes it the same way and cannot part;
//   - a mismatch that becomes a match once every float is read to
//     fragileDigits significant digits.
//
// No official evaluator reports this; it tells a paper's author which
// items depend on the engine.
//
// It returns why, or "" when the verdict is not fragile.
func fragile(m Metric, pred, gold Denotation, correct bool) string {
	switch {
	case correct:
		if pred.SQL != gold.SQL && hasLongFloat(pred.Rows) {
			return "matched on a float's last digits, computed another way than the gold's"
		}
	case (hasReal(pred.Rows) || hasReal(gold.Rows)) && m.equal(roundFloats(pred), roundFloats(gold)):
		return "differs only past a float's 12th significant digit"
	}
	return ""
}

func hasReal(rows [][]sqlenv.Cell) bool {
	for _, row := range rows {
		for _, c := range row {
			if c.Kind == sqlenv.KindReal {
				return true
			}
		}
	}
	return false
}

func hasLongFloat(rows [][]sqlenv.Cell) bool {
	for _, row := range rows {
		for _, c := range row {
			if c.Kind == sqlenv.KindReal && significantDigits(c.Real) >= longFloat {
				return true
			}
		}
	}
	return false
}

// significantDigits counts the significant digits of f's shortest decimal
// form that reads back as f.
func significantDigits(f float64) int {
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±x
	mant, _, _ := strings.Cut(strings.TrimPrefix(s, "-"), "e")
	return len(strings.Replace(mant, ".", "", 1))
}

// roundFloats returns d with every float rounded to fragileDigits
// significant digits; d itself is not changed.
func roundFloats(d Denotation) Denotation {
	rows := make([][]sqlenv.Cell, len(d.Rows))
	for i, row := range d.Rows {
		rows[i] = make([]sqlenv.Cell, len(row))
		for j, c := range row {
			if c.Kind == sqlenv.KindReal {
				c.Real, _ = strconv.ParseFloat(strconv.FormatFloat(c.Real, 'g', fragileDigits, 64), 64)
			}
			rows[i][j] = c
		}
	}
	d.Rows = rows
	return d
}
