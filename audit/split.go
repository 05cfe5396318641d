package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/synth"
	"github.com/rlgate/rlgate/stages/tasks"
)

// The checks of the split audit.
const (
	CheckSplitIDs       = "split-task-ids"   // no task id is in both training and evaluation data
	CheckSplitQuestions = "split-questions"  // no question is, exactly or nearly (bigram Jaccard), once normalised
	CheckSplitDatabases = "split-databases"  // with SplitByDatabase: no database is
	CheckSFTvsRL        = "sft-rl-disjoint"  // the SFT and RL training data share no task id
	CheckSplitData      = "split-train-data" // the training runs name their data
)

// SplitOverlap is one item found on both sides of a split.
type SplitOverlap struct {
	Train string  `json:"train"` // task id, or database
	Eval  string  `json:"eval"`
	Score float64 `json:"score,omitempty"` // bigram Jaccard, for questions
}

// taskFile is a tasks file one side of a split read, with the entry that
// names it.
type taskFile struct {
	what  string
	tasks []tasks.Task
	seq   int64
}

// Split checks that training never saw the evaluation: the tasks of the
// imported datasets the labelled training runs read (--in NAME=DIR) and
// the tasks the evaluations graded share no task id, no question (normalised:
// case, punctuation and spacing; exactly, or with bigram Jaccard at least
// NearDuplicate) and, with SplitByDatabase, no database; and the SFT and
// RL runs' data share no task id. Every file is verified against the
// digest the ledger recorded before it is read.
func Split(ctx context.Context, l *ledger.Ledger, s Subjects, o Options) (*Report, error) {
	return split(ctx, l, s, o, nil)
}

// split is Split reading tasks files through cache.
func split(ctx context.Context, l *ledger.Ledger, s Subjects, o Options, cache *scanCache) (*Report, error) {
	o = o.withDefaults()
	r := newReport(AuditSplit, s)
	evals, trains, err := loadSubjects(ctx, l, s)
	if err != nil {
		return nil, err
	}
	var train []taskFile
	byTrain := map[string]int{}         // label -> index in train
	byProduced := map[string]taskFile{} // label -> the tasks of the data a synthesis or export wrote for it
	for _, t := range trains {
		p, whole, err := producedTasks(ctx, l, t, cache)
		if err != nil {
			r.fail(CheckSplitData, nil, []int64{t.run.StartedSeq}, "%s: %v", t.Label, err)
			continue
		}
		if p != nil {
			byProduced[t.Label] = *p
		}
		a, man, err := t.datasetInput(ctx, l)
		switch {
		case err != nil:
			r.fail(CheckSplitData, nil, []int64{a.Seq}, "%s: %v", t.Label, err)
			continue
		case man != nil:
			path := filepath.Join(a.Path, dataset.TasksFile)
			ts, err := cache.readTasks(ctx, l, path, man.Tasks.Digest)
			if err != nil {
				r.fail(CheckSplitData, nil, []int64{a.Seq}, "%s: %v", t.Label, err)
				continue
			}
			train = append(train, taskFile{fmt.Sprintf("%s (training %s)", t.Label, t.Run), ts, a.Seq})
		case p != nil && whole:
			train = append(train, *p)
		default:
			continue
		}
		byTrain[t.Label] = len(train) - 1
	}
	if len(train) == 0 {
		r.fail(CheckSplitData, nil, nil, "no training run names an imported dataset as input, so the split cannot be checked. Try: rlgate run --in data=DIR (a dataset rlgate data import wrote)")
		return r, nil
	}
	var eval []taskFile
	seenEval := map[string]bool{}
	for _, e := range evals {
		if seenEval[e.rollout.Tasks+"\x00"+e.rollout.TaskSet.String()] {
			continue
		}
		seenEval[e.rollout.Tasks+"\x00"+e.rollout.TaskSet.String()] = true
		all, err := cache.readTasks(ctx, l, e.rollout.Tasks, e.rollout.TasksDigest)
		if err != nil {
			r.fail(CheckSplitData, nil, []int64{e.rolloutRun.StartedSeq}, "%s: %v", e.Label, err)
			continue
		}
		// Only the tasks evaluated count: a run may cover part of a file.
		rows, err := l.Outcomes(ctx, e.Run)
		if err != nil {
			return nil, err
		}
		graded := map[string]bool{}
		for _, o := range rows {
			graded[o.TaskID] = true
		}
		var ts []tasks.Task
		for _, t := range all {
			if graded[t.ID] {
				ts = append(ts, t)
			}
		}
		eval = append(eval, taskFile{fmt.Sprintf("%s (rollout %s)", e.Label, e.grade.Rollout), ts, e.rolloutRun.StartedSeq})
	}

	for _, tr := range train {
		for _, ev := range eval {
			seqs := []int64{tr.seq, ev.seq}
			pair := tr.what + " and " + ev.what
			ids := sharedIDs(tr.tasks, ev.tasks)
			overlapFinding(r, CheckSplitIDs, ids, seqs, pair, "task ids")
			overlapFinding(r, CheckSplitQuestions, sharedQuestions(tr.tasks, ev.tasks, o.NearDuplicate), seqs, pair, "questions")
			if o.SplitByDatabase {
				overlapFinding(r, CheckSplitDatabases, sharedDBs(tr.tasks, ev.tasks), seqs, pair, "databases")
			}
		}
	}
	// SFT against RL: the task ids each run's data holds, as the synthesis
	// or export that wrote it recorded them, else its dataset's.
	sides := [2]*taskFile{}
	for i, label := range []string{LabelSFT, LabelRL} {
		if p, ok := byProduced[label]; ok {
			sides[i] = &p
		} else if j, ok := byTrain[label]; ok {
			sides[i] = &train[j]
		}
	}
	if sft, rl := sides[0], sides[1]; sft != nil && rl != nil {
		overlapFinding(r, CheckSFTvsRL, sharedIDs(sft.tasks, rl.tasks), []int64{sft.seq, rl.seq}, sft.what+" and "+rl.what, "task ids")
	}
	return r, nil
}

// producer is what the split audit reads of the run.start of a run that
// wrote training data (rlgate synth, rlgate export): the blob of task ids
// its output holds, the tasks file they come from, and an RL export's
// exclusion.
type producer struct {
	Stage       string        `json:"stage"`
	TaskIDs     ledger.Digest `json:"task_ids"`
	Tasks       string        `json:"tasks"`
	TasksDigest ledger.Digest `json:"tasks_digest"`
	Exclusion   *struct {
		Path     string        `json:"path"`
		Digest   ledger.Digest `json:"digest"`
		Excluded int           `json:"excluded"`
	} `json:"exclusion"`
}

// producedTasks returns the tasks of the data training run t read when
// its inputs were written by runs that recorded their task ids (the
// lineage rlgate run recorded with each input): the union of their ids,
// each with its task from the recorded tasks file (verified) when there is
// one, else the id alone; whole reports that every id had its task. Nil
// when no input has such a producer.
func producedTasks(ctx context.Context, l *ledger.Ledger, t *trainRun, cache *scanCache) (*taskFile, bool, error) {
	var out *taskFile
	whole := true
	seen := map[string]bool{}
	var whats []string
	for _, a := range t.artifacts {
		if a.Role != records.RoleInput || a.ProducedBy == nil || a.ProducedBy.Run == "" {
			continue // no producer, or an artifact recorded outside a run (data render, hash --record)
		}
		pr, err := l.RunStatus(ctx, a.ProducedBy.Run)
		if err != nil {
			return nil, false, fmt.Errorf("input %s: %w", a.Name, err)
		}
		if pr.Stage != synth.Stage && pr.Stage != export.Stage {
			continue
		}
		var p producer
		if err := l.DecodeBody(ctx, pr.StartedSeq, &p); err != nil {
			return nil, false, fmt.Errorf("input %s: %w", a.Name, err)
		}
		if p.TaskIDs.IsZero() {
			continue // a user's own stage of that name (rlgate run --stage synth): no recorded task ids
		}
		raw, err := l.ReadBlob(p.TaskIDs)
		if err != nil {
			return nil, false, fmt.Errorf("input %s: task ids of %s: %w", a.Name, a.ProducedBy.Run, err)
		}
		var ids []string
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, false, fmt.Errorf("input %s: task ids of %s: %w", a.Name, a.ProducedBy.Run, err)
		}
		byID := map[string]tasks.Task{}
		if p.Tasks != "" {
			ts, err := cache.readTasks(ctx, l, p.Tasks, p.TasksDigest)
			if err != nil {
				return nil, false, fmt.Errorf("input %s: tasks of %s: %w", a.Name, a.ProducedBy.Run, err)
			}
			for _, tk := range ts {
				byID[tk.ID] = tk
			}
		}
		if out == nil {
			out = &taskFile{seq: a.Seq}
		}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			tk, ok := byID[id]
			if !ok {
				tk, whole = tasks.Task{ID: id}, false
			}
			out.tasks = append(out.tasks, tk)
		}
		what := fmt.Sprintf("%d tasks written by %s", len(ids), a.ProducedBy.Run)
		if x := p.Exclusion; x != nil {
			what += fmt.Sprintf(", which left out the %d ids of %s (%s)", x.Excluded, x.Path, x.Digest)
		}
		whats = append(whats, what)
	}
	if out == nil {
		return nil, false, nil
	}
	out.what = fmt.Sprintf("%s (training %s: %s)", t.Label, t.Run, strings.Join(whats, "; "))
	return out, whole, nil
}

// overlapFinding adds a split check: a pass when nothing is shared, else a
// failure listing every overlap.
func overlapFinding(r *Report, check string, shared []SplitOverlap, seqs []int64, pair, what string) {
	if len(shared) == 0 {
		r.pass(check, nil, seqs, "%s share no %s", pair, what)
		return
	}
	first := shared[0].Train
	if shared[0].Eval != first {
		first += " ~ " + shared[0].Eval
	}
	r.fail(check, shared, seqs, "%s share %d %s; first: %s", pair, len(shared), what, first)
}

func sharedIDs(a, b []tasks.Task) []SplitOverlap {
	in := map[string]bool{}
	for _, t := range a {
		in[t.ID] = true
	}
	var out []SplitOverlap
	for _, t := range b {
		if in[t.ID] {
			out = append(out, SplitOverlap{Train: t.ID, Eval: t.ID})
		}
	}
	return out
}

func sharedDBs(a, b []tasks.Task) []SplitOverlap {
	in := map[string]bool{}
	for _, t := range a {
		in[t.DBID] = true
	}
	var dbs []string
	for _, t := range b {
		if in[t.DBID] {
			dbs = append(dbs, t.DBID)
		}
	}
	slices.Sort(dbs)
	var out []SplitOverlap
	for _, d := range slices.Compact(dbs) {
		out = append(out, SplitOverlap{Train: d, Eval: d})
	}
	return out
}

// sharedQuestions pairs each evaluation question with a training question
// that is the same once normalised, or whose word-bigram Jaccard
// similarity is at least near; candidates come from an index of bigrams.
func sharedQuestions(train, eval []tasks.Task, near float64) []SplitOverlap {
	exact := map[string]string{}
	index := map[string][]int{}
	grams := make([]map[string]bool, len(train))
	for i, t := range train {
		words := questionWords(t.Question)
		exact[strings.Join(words, " ")] = t.ID
		grams[i] = bigrams(words)
		for g := range grams[i] {
			index[g] = append(index[g], i)
		}
	}
	var out []SplitOverlap
	for _, e := range eval {
		words := questionWords(e.Question)
		if id, ok := exact[strings.Join(words, " ")]; ok {
			out = append(out, SplitOverlap{Train: id, Eval: e.ID, Score: 1})
			continue
		}
		eg := bigrams(words)
		shared := map[int]int{}
		for g := range eg {
			for _, i := range index[g] {
				shared[i]++
			}
		}
		best, bestScore := -1, 0.0
		for i, n := range shared {
			j := float64(n) / float64(len(eg)+len(grams[i])-n)
			if j > bestScore || (j == bestScore && i < best) {
				best, bestScore = i, j
			}
		}
		if best >= 0 && bestScore >= near {
			out = append(out, SplitOverlap{Train: train[best].ID, Eval: e.ID, Score: bestScore})
		}
	}
	return out
}

// questionWords lower-cases a question and splits it into words of
// letters and digits.
func questionWords(q string) []string {
	return strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func bigrams(words []string) map[string]bool {
	out := map[string]bool{}
	for i := 0; i+1 < len(words); i++ {
		out[words[i]+" "+words[i+1]] = true
	}
	return out
}
