package grade

import (
	"slices"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// BirdSoftF1 is BIRD mini-dev's Soft-F1 (evaluation_f1.py's
// calculate_f1_score) of the predicted rows against the gold rows, with
// its float arithmetic, so that the value is the official one bit for
// bit. A failed query scores 0, as the script's exception path does.
//
// Its quirks are kept, since the point is agreement with the published
// numbers:
//   - both results are de-duplicated (Python equality, the first
//     occurrence kept), then predicted row i is compared only with gold
//     row i: the score depends on row order, and a prediction returning
//     the gold's rows in another order can score 0 while its EX is 1;
//   - within a pair of rows, a predicted value counts as matched when it
//     is in the gold row anywhere (column order does not matter, and a
//     repeated value matches as often as it occurs in the prediction),
//     each count divided by the gold row's width;
//   - two empty results score 1, and an empty prediction against a
//     non-empty gold scores 0.
func BirdSoftF1(pred, gold Denotation) float64 {
	if pred.Err != nil || gold.Err != nil {
		return 0
	}
	if len(pred.Rows) == 0 && len(gold.Rows) == 0 {
		return 1
	}
	p, g := distinctRows(pred.Rows), distinctRows(gold.Rows)
	// tp, fp and fn are sum(match_scores), sum(pred_only_scores) and
	// sum(truth_only_scores): Python 3.11's sum adds left to right, and so
	// do we.
	var tp, fp, fn float64
	for i, gr := range g {
		if i >= len(p) {
			fn++
			continue
		}
		m, po, to := rowMatch(p[i], gr)
		tp += m
		fp += po
		fn += to
	}
	for range len(p) - len(g) {
		fp++
	}
	var precision, recall float64
	if tp+fp > 0 {
		precision = tp / (tp + fp)
	}
	if tp+fn > 0 {
		recall = tp / (tp + fn)
	}
	if precision+recall > 0 {
		return 2 * precision * recall / (precision + recall)
	}
	return 0
}

// birdSoftF1 is BirdSoftF1 of the results as evaluation_f1.py's sqlite3
// sees them (MetricBird.view): text that is not UTF-8 raises there, and
// scores 0.
func birdSoftF1(pred, gold Denotation) float64 {
	p, pErr := MetricBird.view(pred)
	g, gErr := MetricBird.view(gold)
	if pErr != nil || gErr != nil {
		return 0
	}
	return BirdSoftF1(p, g)
}

// distinctRows is list(dict.fromkeys(rows)): rows de-duplicated under
// Python equality, first occurrences in order, each as its cells' keys.
func distinctRows(rows [][]sqlenv.Cell) [][]string {
	seen := make(map[string]bool, len(rows))
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		k := rowKey(r, pyKey)
		if seen[k] {
			continue
		}
		seen[k] = true
		cells := make([]string, len(r))
		for j, c := range r {
			cells[j] = pyKey(c)
		}
		out = append(out, cells)
	}
	return out
}

// rowMatch is calculate_row_match: the share of the predicted values found
// in the gold row, of those not found, and of the gold values not in the
// predicted row, each over the gold row's width.
func rowMatch(pred, gold []string) (match, predOnly, truthOnly float64) {
	var matches, pOnly, tOnly int
	for _, v := range pred {
		if slices.Contains(gold, v) {
			matches++
		} else {
			pOnly++
		}
	}
	for _, v := range gold {
		if !slices.Contains(pred, v) {
			tOnly++
		}
	}
	n := float64(len(gold))
	return float64(matches) / n, float64(pOnly) / n, float64(tOnly) / n
}
