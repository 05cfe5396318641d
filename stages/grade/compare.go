package grade

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// Metric names an execution-match rule. The metric of an evaluation is
// recorded with it.
type Metric string

// The execution-match rules.
const (
	// MetricBird is BIRD's evaluation_ex.py: set(pred_rows) ==
	// set(gold_rows) with Python equality; pred runs first, then gold, on
	// the gold's database within one budget; any error or timeout is 0.
	MetricBird Metric = "bird"
	// MetricSpider is the Spider test-suite's exec_eval.eval_exec_match
	// with its defaults: DISTINCT stripped from both queries, rows ordered
	// only when the gold contains "order by", bags of rows otherwise, any
	// permutation of the prediction's columns.
	MetricSpider Metric = "spider"
	// MetricStrict is our own rule: same column count, bags of rows (lists
	// when the gold's outermost query has an ORDER BY clause), numbers
	// compared by exact decimal value, text and blobs by bytes.
	MetricStrict Metric = "strict"
	// MetricBirdSoftF1 is BIRD mini-dev's evaluation_f1.py: each item
	// scores its Soft-F1 (BirdSoftF1), executed as MetricBird executes;
	// the item's correct is the bird execution match of the same rows,
	// so one grading gives both official numbers.
	MetricBirdSoftF1 Metric = "bird-softf1"
	// MetricSpiderEM is the Spider evaluator's exact set match
	// (evaluation.py --etype match, default flags): the parsed prediction
	// against the parsed gold, nothing executed (stages/spidersql). A
	// prediction the official parser cannot parse scores 0 as a
	// pred-error naming why.
	MetricSpiderEM Metric = "spider-em"
)

// Metrics lists the metrics rlgate grades under, for help and errors.
var Metrics = []Metric{MetricBird, MetricSpider, MetricStrict, MetricBirdSoftF1, MetricSpiderEM}

// Executes reports whether m grades by executing the queries; only such a
// metric can reduce a rollout's samples by their results or reward them.
func (m Metric) Executes() bool { return m != MetricSpiderEM }

// MetricList names Metrics for help and errors: "bird, spider, ... or x".
func MetricList() string {
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = string(m)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseMetric accepts a name from Metrics.
func ParseMetric(s string) (Metric, error) {
	if m := Metric(s); slices.Contains(Metrics, m) {
		return m, nil
	}
	return "", fmt.Errorf("parse metric %q: %w", s, ErrUnknownMetric)
}

// execution is the execution-match rule m executes and compares with:
// m itself, or bird for bird-softf1, whose official script runs the
// queries as evaluation_ex.py does.
func (m Metric) execution() Metric {
	if m == MetricBirdSoftF1 {
		return MetricBird
	}
	return m
}

// Query returns the SQL the metric executes for q: q itself, except that
// the spider rule rewrites it as the official evaluator does (see
// spiderQuery).
func (m Metric) Query(q string) string {
	if m == MetricSpider {
		return spiderQuery(q)
	}
	return q
}

// Denotation is what one query denotes on one database: its rows, or the
// error it raised. Rows keep SQLite's order and types.
type Denotation struct {
	SQL     string // as executed, after Metric.Query
	Columns []string
	Rows    [][]sqlenv.Cell
	Err     error
	Elapsed time.Duration
}

// Verdict classifies an outcome.
type Verdict string

// The verdicts. Only VerdictCorrect scores 1.
const (
	VerdictCorrect    Verdict = "correct"
	VerdictWrong      Verdict = "wrong"       // both ran, the results differ
	VerdictPredError  Verdict = "pred-error"  // the prediction failed, timed out or had no SQL
	VerdictGoldDefect Verdict = "gold-defect" // the gold failed: the task is broken, flag it
)

// Judgement is the grade of one prediction against one gold.
type Judgement struct {
	Metric  Metric  `json:"metric"`
	Verdict Verdict `json:"verdict"`
	Correct bool    `json:"correct"`          // execution match: 1, else 0
	Detail  string  `json:"detail,omitempty"` // why it is not correct, for reports
	// Fragile is set when the verdict rests on the last digits of a float
	// (see fragile) or on the order in which SUM, AVG or TOTAL add floats
	// (Grader.Grade), so that another SQLite could flip it;
	// FragileReason says which.
	Fragile       bool   `json:"fragile,omitempty"`
	FragileReason string `json:"fragile_reason,omitempty"`
	// Score is the item's graded score where the metric has one besides
	// execution match: the Soft-F1 under bird-softf1 (0 when either query
	// failed).
	Score *float64 `json:"score,omitempty"`
	// Pred and Gold are the denotations compared; not for serialising.
	Pred, Gold Denotation `json:"-"`
}

// Compare grades pred against gold under m, without touching a database.
// A failed gold makes a gold defect, scored 0 under every metric (bird
// scores it 0; the Spider evaluator raises, which we report as a defect);
// a failed prediction scores 0.
func Compare(m Metric, pred, gold Denotation) Judgement {
	o := Judgement{Metric: m, Pred: pred, Gold: gold}
	x := m.execution()
	gold, gErr := x.view(gold)
	pred, pErr := x.view(pred)
	switch {
	case gErr != nil:
		o.Verdict, o.Detail = VerdictGoldDefect, "gold: "+gErr.Error()
	case pErr != nil:
		o.Verdict, o.Detail = VerdictPredError, pErr.Error()
	case x.equal(pred, gold):
		o.Verdict, o.Correct = VerdictCorrect, true
		o.FragileReason = fragile(x, pred, gold, true)
	default:
		o.Verdict, o.Detail = VerdictWrong, difference(pred, gold)
		o.FragileReason = fragile(x, pred, gold, false)
	}
	o.Fragile = o.FragileReason != ""
	if m == MetricBirdSoftF1 {
		f := birdSoftF1(o.Pred, o.Gold)
		o.Score = &f
	}
	return o
}

// view turns a denotation into what the metric's evaluator sees, or the
// error the evaluator would meet: Python's sqlite3 runs an empty statement
// as a query with no rows; the bird evaluator's sqlite3 raises on text
// that is not UTF-8 and the spider one drops such bytes.
func (m Metric) view(d Denotation) (Denotation, error) {
	if errors.Is(d.Err, sqlenv.ErrEmptyStatement) && m != MetricStrict {
		if m == MetricSpider && strings.TrimSpace(d.SQL) == "" {
			// remove_distinct raises on it (sqlparse finds no statement).
			return d, errors.New("empty query")
		}
		return Denotation{SQL: d.SQL}, nil
	}
	if d.Err != nil {
		return d, d.Err
	}
	switch m {
	case MetricBird:
		for _, row := range d.Rows {
			for _, c := range row {
				if c.Kind == sqlenv.KindText && !utf8.ValidString(c.Str) {
					return d, errors.New("could not decode text to UTF-8")
				}
			}
		}
	case MetricSpider:
		d.Rows = spiderText(d.Rows)
	}
	return d, nil
}

func (m Metric) equal(pred, gold Denotation) bool {
	switch m {
	case MetricBird:
		return sameSet(rowKeys(pred.Rows, pyKey), rowKeys(gold.Rows, pyKey))
	case MetricSpider:
		return spiderResultEq(gold.Rows, pred.Rows, spiderOrderMatters(gold.SQL))
	}
	if len(pred.Columns) != len(gold.Columns) {
		return false
	}
	p, g := rowKeys(pred.Rows, decimalKey), rowKeys(gold.Rows, decimalKey)
	if hasOrderBy(gold.SQL) {
		return slices.Equal(p, g)
	}
	return sameBag(p, g)
}

// difference says briefly how two results differ.
func difference(pred, gold Denotation) string {
	switch {
	case len(pred.Rows) != len(gold.Rows):
		return fmt.Sprintf("%d rows, gold has %d", len(pred.Rows), len(gold.Rows))
	case len(pred.Columns) != len(gold.Columns):
		return fmt.Sprintf("%d columns, gold has %d", len(pred.Columns), len(gold.Columns))
	}
	return "values differ"
}

// sameSet reports whether a and b hold the same distinct strings.
func sameSet(a, b []string) bool {
	sa := make(map[string]struct{}, len(a))
	for _, k := range a {
		sa[k] = struct{}{}
	}
	sb := make(map[string]struct{}, len(b))
	for _, k := range b {
		if _, ok := sa[k]; !ok {
			return false
		}
		sb[k] = struct{}{}
	}
	return len(sa) == len(sb)
}

// sameBag reports whether a and b hold the same strings with the same
// multiplicities.
func sameBag(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := make(map[string]int, len(a))
	for _, k := range a {
		count[k]++
	}
	for _, k := range b {
		count[k]--
		if count[k] < 0 {
			return false
		}
	}
	return true
}
