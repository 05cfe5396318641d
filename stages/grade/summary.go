package grade

import (
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// Summary is what a grading reports, of a predictions file (FileSummary)
// or of a rollout's frozen trajectories (TrajectorySummary): the totals,
// EX per difficulty and an item per task, beside what the kind of input
// adds. It is the --json of rlgate grade and eval, a contract: fields are
// only added.
type Summary[I SummaryItem] struct {
	Run     string `json:"run"`
	Rollout string `json:"rollout,omitempty"` // trajectories: the rollout run graded
	Metric  Metric `json:"metric"`
	// Mode and K: trajectories only; greedy, majority or passk.
	Mode string `json:"mode,omitempty"`
	K    int    `json:"k,omitempty"`
	// Predictions and PredDigest: a predictions file only.
	Predictions string        `json:"predictions,omitempty"`
	PredDigest  ledger.Digest `json:"predictions_digest,omitzero"`
	Dataset     string        `json:"dataset"`
	Correct     int           `json:"correct"`
	Total       int           `json:"total"`
	EX          float64       `json:"ex"`
	// Score is the mean of the items' scores in percent, for a metric
	// that scores items besides execution match (bird-softf1: Soft-F1).
	Score        *float64          `json:"score,omitempty"`
	ByDifficulty map[string]Bucket `json:"by_difficulty,omitempty"`
	GoldDefects  int               `json:"gold_defects"`
	// Fragile counts the items whose verdict rests on a float's last
	// digits (Outcome.Fragile): another SQLite could flip them.
	Fragile int `json:"fragile"`
	Skipped int `json:"skipped"` // source items without a database, not graded
	// Unparsed counts, under spider-em, the predictions the official
	// parser cannot parse, scored 0 (each item's error says why).
	Unparsed int `json:"unparsed,omitempty"`
	// Databases are the databases graded on, by digest, and the SQLite
	// version.
	Databases *DatabaseCheck `json:"database_check"`
	// Warnings are the defects a lenient read of a predictions file
	// tolerated; never any for trajectories.
	Warnings []Warning `json:"warnings"`
	// AllowIncomplete is TrajectoryOptions.AllowIncomplete; Incomplete is
	// set when the rollout graded had Unfinished samples, counted wrong.
	AllowIncomplete bool `json:"allow_incomplete"`
	Incomplete      bool `json:"incomplete"`
	Unfinished      int  `json:"unfinished_episodes"`
	// PassAtK is the mean of the items' unbiased pass@k, in percent, in
	// passk mode; there an item is correct when any sample is.
	PassAtK  *float64 `json:"pass_at_k,omitempty"`
	Items    []I      `json:"items"`
	StartSeq int64    `json:"start_seq"`
	EndSeq   int64    `json:"end_seq"`
}

// FileSummary is what grading one predictions file reports.
type FileSummary = Summary[Item]

// TrajectorySummary is what grading a rollout's trajectories reports.
type TrajectorySummary = Summary[TrajectoryItem]

// SummaryItem is an item of a Summary, Item or TrajectoryItem: a task's
// grade, and for a rollout graded in passk mode, its pass@k.
type SummaryItem interface {
	item() Item
	passAtK() *float64
}

func (it Item) item() Item                  { return it }
func (it Item) passAtK() *float64           { return nil }
func (it TrajectoryItem) passAtK() *float64 { return it.PassAtK }

// tally fills the totals, per difficulty when the dataset has difficulty,
// and in passk mode the mean pass@k.
func (s *Summary[I]) tally() {
	buckets := map[string]*Bucket{}
	var passk float64
	total := &Bucket{}
	var sums map[*Bucket]float64
	for _, x := range s.Items {
		it := x.item()
		if it.Verdict == VerdictGoldDefect {
			s.GoldDefects++
		}
		if it.Fragile {
			s.Fragile++
		}
		if s.Metric == MetricSpiderEM && it.Verdict == VerdictPredError && strings.HasPrefix(it.Error, unparsedPrefix) {
			s.Unparsed++
		}
		counted := []*Bucket{total}
		if it.Difficulty != "" {
			b := buckets[it.Difficulty]
			if b == nil {
				b = &Bucket{}
				buckets[it.Difficulty] = b
			}
			counted = append(counted, b)
		}
		for _, b := range counted {
			b.Total++
			if it.Correct {
				b.Correct++
			}
			if it.Score != nil {
				if sums == nil {
					sums = map[*Bucket]float64{}
				}
				// Summed in item order, as evaluation_f1.py's sum(results).
				sums[b] += *it.Score
			}
		}
		if p := x.passAtK(); p != nil {
			passk += *p
		}
	}
	finish := func(b *Bucket) {
		b.EX = percent(b.Correct, b.Total)
		if sum, ok := sums[b]; ok {
			v := sum / float64(b.Total) * 100
			b.Score = &v
		}
	}
	finish(total)
	s.Correct, s.Total, s.EX, s.Score = total.Correct, total.Total, total.EX, total.Score
	if len(buckets) > 0 {
		s.ByDifficulty = map[string]Bucket{}
		for k, b := range buckets {
			finish(b)
			s.ByDifficulty[k] = *b
		}
	}
	if s.Mode == ModePassK && s.Total > 0 {
		p := 100 * passk / float64(s.Total)
		s.PassAtK = &p
	}
}
