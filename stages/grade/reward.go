package grade

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// Weights combine reward components into the total. They are recorded
// with every reward, so a total can be recomputed and compared.
type Weights struct {
	Execution float64 `json:"execution"` // binary execution match
	SoftF1    float64 `json:"soft_f1"`   // F1 over result rows
	// BirdSoftF1 is BIRD's official Soft-F1 (BirdSoftF1), whose rows pair
	// by position; omitted from the record when zero, so weights recorded
	// before it existed hash as they did.
	BirdSoftF1    float64 `json:"bird_soft_f1,omitempty"`
	Format        float64 `json:"format"`         // final turn well formed
	Parses        float64 `json:"parses"`         // the SQL compiles against the database
	SchemaJaccard float64 `json:"schema_jaccard"` // tables and columns named, against gold
	Bigram        float64 `json:"bigram"`         // SQL token bigram overlap with gold
}

// DefaultWeights is the binary execution reward alone, as in the seeds.
func DefaultWeights() Weights { return Weights{Execution: 1} }

// RewardInput is one frozen trajectory's final answer and its task's gold.
type RewardInput struct {
	Metric     Metric
	DBPath     string
	PredSQL    string // "" when the trajectory gave no solution
	GoldSQL    string
	WellFormed bool // the final turn parsed (sqlenv.ParseTurn)
}

// Reward is every component, each in [0, 1], the weights and the total.
type Reward struct {
	Weights       Weights   `json:"weights"`
	Execution     float64   `json:"execution"`
	SoftF1        float64   `json:"soft_f1"`
	BirdSoftF1    float64   `json:"bird_soft_f1"`
	Format        float64   `json:"format"`
	Parses        float64   `json:"parses"`
	SchemaJaccard float64   `json:"schema_jaccard"`
	Bigram        float64   `json:"bigram"`
	Total         float64   `json:"total"`
	Outcome       Judgement `json:"outcome"`
}

// Reward grades in and computes every reward component. The error reports
// only a database that cannot be hashed or read for its schema.
func (g *Grader) Reward(ctx context.Context, in RewardInput, w Weights) (Reward, error) {
	o, err := g.Grade(ctx, in.Metric, in.DBPath, in.PredSQL, in.GoldSQL)
	if err != nil {
		return Reward{}, err
	}
	r := Reward{Weights: w, Outcome: o, SoftF1: SoftF1(o.Pred, o.Gold), BirdSoftF1: birdSoftF1(o.Pred, o.Gold), Bigram: BigramOverlap(in.PredSQL, in.GoldSQL)}
	if o.Correct {
		r.Execution = 1
	}
	if in.WellFormed {
		r.Format = 1
	}
	if in.PredSQL != "" && g.exec.Prepare(ctx, in.DBPath, in.PredSQL) == nil {
		r.Parses = 1
	}
	s, err := g.schema(ctx, in.DBPath)
	if err != nil {
		return Reward{}, err
	}
	r.SchemaJaccard = jaccard(s.items(in.PredSQL), s.items(in.GoldSQL))
	r.Total = w.Execution*r.Execution + w.SoftF1*r.SoftF1 + w.BirdSoftF1*r.BirdSoftF1 + w.Format*r.Format +
		w.Parses*r.Parses + w.SchemaJaccard*r.SchemaJaccard + w.Bigram*r.Bigram
	return r, nil
}

// SoftF1 is the F1 of the predicted rows against the gold rows as bags,
// rows compared with Python equality (1 == 1.0): precision is the share
// of predicted rows matched in gold, recall the share of gold rows
// matched. Two empty results score 1; a failed query scores 0.
func SoftF1(pred, gold Denotation) float64 {
	if pred.Err != nil || gold.Err != nil {
		return 0
	}
	if len(pred.Rows) == 0 && len(gold.Rows) == 0 {
		return 1
	}
	count := make(map[string]int, len(gold.Rows))
	for _, k := range rowKeys(gold.Rows, pyKey) {
		count[k]++
	}
	common := 0
	for _, k := range rowKeys(pred.Rows, pyKey) {
		if count[k] > 0 {
			count[k]--
			common++
		}
	}
	return dice(common, len(pred.Rows), len(gold.Rows))
}

// dice is 2·common/(a+b), the F1 of a common part of two bags of sizes a
// and b; 0 when both are empty.
func dice(common, a, b int) float64 {
	if a+b == 0 {
		return 0
	}
	return 2 * float64(common) / float64(a+b)
}

// BigramOverlap is the F1 (Dice) of the bags of adjacent token pairs of
// two queries, tokens lower-cased, white space and comments dropped. Two
// queries too short for a bigram score 1 when their tokens are equal.
func BigramOverlap(pred, gold string) float64 {
	p, g := words(pred), words(gold)
	if len(p) < 2 && len(g) < 2 {
		if strings.Join(p, " ") == strings.Join(g, " ") {
			return 1
		}
		return 0
	}
	count := make(map[[2]string]int)
	for i := 0; i+1 < len(g); i++ {
		count[[2]string{g[i], g[i+1]}]++
	}
	common := 0
	for i := 0; i+1 < len(p); i++ {
		if k := [2]string{p[i], p[i+1]}; count[k] > 0 {
			count[k]--
			common++
		}
	}
	return dice(common, max(len(p)-1, 0), max(len(g)-1, 0))
}

// jaccard is |a ∩ b| / |a ∪ b|, 1 when both are empty.
func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// schema is the lower-cased table and column names of a database.
type schema struct {
	tables  map[string]bool
	columns map[string]bool
}

// items returns the schema items q names: "table:<t>" for each word that
// is a table name, "column:<c>" for each that is a column name of any
// table. The tokenizer does not resolve aliases or scopes; that is what
// "simple" buys.
func (s schema) items(q string) map[string]bool {
	out := make(map[string]bool)
	for _, w := range words(q) {
		if s.tables[w] {
			out["table:"+w] = true
		}
		if s.columns[w] {
			out["column:"+w] = true
		}
	}
	return out
}

// schema reads the table and column names of the database at dbPath,
// once per path (a failure is not kept).
func (g *Grader) schema(ctx context.Context, dbPath string) (schema, error) {
	g.mu.Lock()
	s, ok := g.schemas[dbPath]
	g.mu.Unlock()
	if ok {
		return s, nil
	}
	res, err := g.exec.Execute(ctx, dbPath,
		"SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p WHERE m.type = 'table'")
	if err != nil {
		return schema{}, fmt.Errorf("read schema of %s: %w", dbPath, err)
	}
	s = schema{tables: make(map[string]bool), columns: make(map[string]bool)}
	for _, row := range res.Rows {
		if row[0].Kind == sqlenv.KindText && row[1].Kind == sqlenv.KindText {
			s.tables[strings.ToLower(row[0].Str)] = true
			s.columns[strings.ToLower(row[1].Str)] = true
		}
	}
	g.mu.Lock()
	g.schemas[dbPath] = s
	g.mu.Unlock()
	return s, nil
}
