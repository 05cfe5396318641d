package grade

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/progress"
	"github.com/rlgate/rlgate/stages/tasks"
)

// FileOptions name one predictions file to grade against an imported
// dataset, the way the official evaluators grade one.
type FileOptions struct {
	Predictions string
	Format      string // FormatBirdJSON, FormatSpiderTxt or FormatJSONL
	Dataset     string // a directory written by rlgate data import
	DBRoot      string // empty: the one recorded at import
	Metric      Metric
	Run         string // run id; empty: one is made from the file name
	// Lenient reads what the official readers tolerate (a BIRD value that is
	// not a string, or lacks the separator, becomes a query on financial)
	// and records the warnings; by default such a file is refused.
	Lenient bool
	// AllowDBMismatch grades on databases whose digest differs from the
	// import's, recording the mismatch; by default that is refused.
	AllowDBMismatch bool
	// Progress, when not nil, hears the database check and the grading's
	// progress (a bar redrawn in place when Terminal).
	Progress io.Writer
	Terminal bool
}

// Item is the grade of one task, as recorded in the ledger's outcomes
// entries beside the derived fields.
type Item struct {
	ledger.Outcome
	Index      int     `json:"index"` // position in the source dataset
	DBID       string  `json:"db_id"`
	Difficulty string  `json:"difficulty,omitempty"`
	Verdict    Verdict `json:"verdict"`
	Error      string  `json:"error,omitempty"`
	// Fragile: the verdict rests on a float's last digits or on the order
	// of a float sum (Outcome.Fragile); FragileReason says which.
	Fragile       bool   `json:"fragile,omitempty"`
	FragileReason string `json:"fragile_reason,omitempty"`
	// Score is the metric's score of the item where it has one besides
	// execution match (Outcome.Score: the Soft-F1 under bird-softf1).
	Score *float64 `json:"score,omitempty"`
}

// Bucket counts one difficulty level (or the total).
type Bucket struct {
	Correct int     `json:"correct"`
	Total   int     `json:"total"`
	EX      float64 `json:"ex"` // percent, as the official scripts print it
	// Score is the mean of the items' Score in percent, as
	// evaluation_f1.py prints Soft-F1; only for a metric with scores.
	Score *float64 `json:"score,omitempty"`
}

// gradeStart is the body of a grading run's run.start entry.
type gradeStart struct {
	ledger.RunStart
	Metric      Metric          `json:"metric"`
	Format      string          `json:"format"`
	Predictions string          `json:"predictions"`
	PredDigest  ledger.Digest   `json:"predictions_digest"`
	Dataset     string          `json:"dataset"`
	TasksDigest ledger.Digest   `json:"tasks_digest"`
	TaskSet     ledger.Digest   `json:"task_set"` // tasks.SetDigest of the tasks graded
	GoldDigest  ledger.Digest   `json:"gold_digest"`
	Options     RecordedOptions `json:"grader_options"`
	Databases   *DatabaseCheck  `json:"database_check"`
	// SpiderSchemas is the digest of the import's spider_schemas.json
	// when exact match graded on the schemas it records.
	SpiderSchemas *ledger.Digest `json:"spider_schemas_digest,omitempty"`
}

// gradeEnd is the body of its run.end entry. Reason says why a failed or
// interrupted grading ended so, as ledger.ActiveRun.Fail writes it.
type gradeEnd struct {
	ledger.RunEnd
	Reason       string            `json:"reason,omitempty"`
	Correct      int               `json:"correct"`
	Total        int               `json:"total"`
	ByDifficulty map[string]Bucket `json:"by_difficulty,omitempty"`
	GoldDefects  int               `json:"gold_defects"`
	Fragile      int               `json:"fragile"`
	Score        *float64          `json:"score,omitempty"`
	Unparsed     int               `json:"unparsed,omitempty"`
}

// outcomeBatch is how many items go in one outcomes entry.
const outcomeBatch = 1000

// GradeFile grades a predictions file against an imported dataset with g
// and records the run in l: its inputs by digest, the databases it graded
// on (checked against the import's digests) and the SQLite version, an
// outcome per task, and the totals. Predictions pair with tasks by
// position in the source file. Defective inputs and databases are refused
// before the run starts; an error after it started ends the run as
// failed, with the error. The run takes two commits: its start, and its
// predictions input, outcomes and end together.
func GradeFile(ctx context.Context, l *ledger.Ledger, g *Grader, o FileOptions) (*FileSummary, error) {
	man, err := dataset.ReadManifest(o.Dataset)
	if err != nil {
		return nil, err
	}
	// The gold and the predictions are read side by side (a tenth of an
	// exact-match grading is reading them); a defect in the gold is named
	// first, as when they were read in turn.
	var golds []gold.Gold
	goldRead := make(chan error, 1)
	go func() {
		var err error
		golds, err = readGold(o.Dataset, man)
		goldRead <- err
	}()
	raw, preds, warns, err := readPredictions(o, man)
	if gerr := <-goldRead; gerr != nil {
		return nil, gerr
	}
	if err != nil {
		return nil, err
	}
	dbRoot := o.DBRoot
	if dbRoot == "" {
		dbRoot = man.DBRoot
	}
	if len(warns) > 0 && !o.Lenient {
		return nil, fmt.Errorf("grade %s: %d defects, first %s: %s: %w. Try: fix the file, or --lenient to read it as the official evaluator does (the defects are then recorded as warnings)",
			o.Predictions, len(warns), warns[0].Where, warns[0].Msg, ErrPredictions)
	}
	for _, gd := range golds {
		if gd.Index >= len(preds) {
			return nil, fmt.Errorf("grade %s: gold %s is at position %d but there are %d predictions", o.Predictions, gd.ID, gd.Index, len(preds))
		}
	}
	s := &FileSummary{Run: o.Run, Metric: o.Metric, Predictions: o.Predictions, PredDigest: ledger.Sum(raw), Dataset: man.Dataset,
		Skipped: len(man.Skipped), Warnings: warns}
	if s.Warnings == nil {
		s.Warnings = []Warning{}
	}
	if s.Run == "" {
		s.Run = fmt.Sprintf("grade-%s-%s-%s", filepath.Base(o.Predictions), s.PredDigest.Hex()[:8], time.Now().UTC().Format("20060102T150405.000"))
	}
	if s.Databases, err = g.Databases(ctx, man, dbRoot, o.AllowDBMismatch, o.Progress); err != nil {
		return nil, fmt.Errorf("grade %s: %w", o.Predictions, err)
	}
	var spiderSchemas *ledger.Digest
	if o.Metric == MetricSpiderEM {
		if spiderSchemas, err = g.useSpiderSchemas(o.Dataset, man, s.Databases); err != nil {
			return nil, fmt.Errorf("grade %s: %w", o.Predictions, err)
		}
	}

	// The tasks are graded while the run's start is recorded: storing the
	// predictions and starting the run wait mostly on fsync, grading on
	// the CPU (exact match grades Spider dev in about the time of those
	// writes).
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bar := progress.Start(o.Progress, o.Terminal, 0, "grade", s.Run, "tasks", len(golds))
	graded := make(chan error, 1)
	go func() {
		var err error
		s.Items, err = gradeTasks(gctx, g, o.Metric, dbRoot, golds, preds, bar)
		bar.Finish()
		graded <- err
	}()
	predBlob, err := l.PutBlobBytes(raw)
	var run *ledger.ActiveRun
	if err == nil {
		run, err = l.StartRun(ctx, s.Run, gradeStart{RunStart: ledger.RunStart{Stage: "grade"}, Metric: o.Metric, Format: o.Format, Predictions: o.Predictions,
			PredDigest: s.PredDigest, Dataset: man.Dataset, TasksDigest: man.Tasks.Digest, TaskSet: goldTaskSet(golds), GoldDigest: man.Gold.Digest,
			Options: g.Options().Record(), Databases: s.Databases, SpiderSchemas: spiderSchemas})
	}
	if err != nil {
		cancel()
		<-graded
		return nil, err
	}
	s.StartSeq = run.Seq
	// The predictions input, the outcomes and the run's end are appended
	// in one transaction, once the grading is done.
	recs := []ledger.Record{{Kind: records.KindArtifact, Run: s.Run, Blobs: []ledger.Digest{predBlob},
		Body: ledger.Artifact{Role: records.RoleInput, Name: "predictions", Kind: records.ArtifactFile, Digest: s.PredDigest}}}
	if err := <-graded; err != nil {
		// Closed as failed (or interrupted), with why, so that the run is
		// not left open for the next command to label killed or crashed.
		status := records.StatusFailed
		if ctx.Err() != nil {
			status = records.StatusInterrupted
		}
		run.EndWith(context.WithoutCancel(ctx), recs, gradeEnd{RunEnd: ledger.RunEnd{Status: status}, Reason: err.Error()})
		return nil, err
	}
	for i := 0; i < len(s.Items); i += outcomeBatch {
		batch := s.Items[i:min(i+outcomeBatch, len(s.Items))]
		recs = append(recs, ledger.Record{Kind: records.KindOutcomes, Run: s.Run, Body: outcomesBody(batch)})
	}
	s.tally()
	end, err := run.EndWith(ctx, recs, gradeEnd{RunEnd: ledger.RunEnd{Status: records.StatusOK}, Correct: s.Correct, Total: s.Total,
		ByDifficulty: s.ByDifficulty, GoldDefects: s.GoldDefects, Fragile: s.Fragile, Score: s.Score, Unparsed: s.Unparsed})
	if err != nil {
		return nil, err
	}
	s.EndSeq = end.Seq
	return s, nil
}

// readPredictions reads o's predictions file, whole (its bytes are
// stored and hashed), and parses it in o's format.
func readPredictions(o FileOptions, man *dataset.Manifest) ([]byte, []Prediction, []Warning, error) {
	raw, err := untrusted.ReadFile(o.Predictions, untrusted.PredictionsLimit)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("grade: %w", err)
	}
	preds, warns, err := ReadPredictions(bytes.NewReader(raw), o.Format, man.Tasks.Count+len(man.Skipped))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("grade %s: %w", o.Predictions, err)
	}
	return raw, preds, warns, nil
}

// readGold reads the dataset's gold.jsonl and refuses it unless it is the
// file the import wrote (its digest in man): a gold file cut short, edited
// or copied from another import would otherwise grade quietly. The
// digest is of the bytes parsed, read once.
func readGold(dir string, man *dataset.Manifest) ([]gold.Gold, error) {
	path := filepath.Join(dir, dataset.GoldFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gold %w", err)
	}
	golds, err := gold.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if d := ledger.Sum(data); d != man.Gold.Digest {
		return nil, &ledger.Error{Op: "read gold", Path: path, Err: fmt.Errorf("%w: digest %s with %d entries, but the import recorded %s with %d", ErrGoldChanged, d, len(golds), man.Gold.Digest, man.Gold.Count),
			Hint: "rlgate data import --force into " + dir + " to write it again"}
	}
	return golds, nil
}

// goldTaskSet is the task set of the tasks a grading grades: every gold
// task of the import gets an outcome.
func goldTaskSet(golds []gold.Gold) ledger.Digest {
	ids := make([]string, len(golds))
	for i, gd := range golds {
		ids[i] = gd.ID
	}
	return tasks.SetDigest(ids)
}

// gradeTasks grades every gold task against its prediction on all cores,
// keeping the results in gold order, and counts each on bar (with the
// errors: a prediction or gold that failed).
func gradeTasks(ctx context.Context, g *Grader, m Metric, dbRoot string, golds []gold.Gold, preds []Prediction, bar *progress.Bar) ([]Item, error) {
	if m == MetricSpiderEM {
		g.readEMSchemas(ctx, dbRoot, golds)
	}
	items := make([]Item, len(golds))
	err := ledger.ForEach(ctx, len(golds), func(ctx context.Context, i int) error {
		gd := golds[i]
		out, err := g.Grade(ctx, m, dataset.DBPath(dbRoot, gd.DBID), preds[gd.Index].SQL, gd.SQL)
		if err != nil {
			return fmt.Errorf("grade %s: %w", gd.ID, err)
		}
		items[i] = Item{Outcome: ledger.Outcome{TaskID: gd.ID, Correct: out.Correct}, Index: gd.Index, DBID: gd.DBID,
			Difficulty: gd.Difficulty, Verdict: out.Verdict, Error: out.Detail, Fragile: out.Fragile, FragileReason: out.FragileReason, Score: out.Score}
		bar.Done(out.Verdict == VerdictPredError || out.Verdict == VerdictGoldDefect)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

func percent(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(k) / float64(n)
}

// Difficulties are the official difficulty levels, in the order the
// official scripts print them: BIRD's simple, moderate, challenging, then
// Spider's hardness easy, medium, hard, extra. A gate policy may claim a
// gain on a group of them (docs/GATE.md).
var Difficulties = []string{"simple", "moderate", "challenging", "easy", "medium", "hard", "extra"}

// DifficultyOrder lists the difficulty levels that are keys of by in the
// order of Difficulties, then any others alphabetically.
func DifficultyOrder[V any](by map[string]V) []string {
	rank := map[string]int{}
	for i, d := range Difficulties {
		rank[d] = i
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	return keys
}
