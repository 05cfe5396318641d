package grade

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/tasks"
)

// SampleGrade is the grade of one recorded episode's final SQL.
type SampleGrade struct {
	Episode rollout.EpisodeRef
	Outcome Judgement
	// Result names the prediction's result set (ResultKey); zero when the
	// prediction failed or there was none, so it takes no part in a vote.
	Result ledger.Digest
	// Reward is every reward component of the sample and their total.
	Reward Reward
}

// Decision is what a task's samples come to: the sample that stands for
// the task, whether the task counts as correct, and for the modes that
// have them, the size of the winning vote and the pass@k estimate.
type Decision struct {
	Chosen  int
	Correct bool
	Votes   int
	PassAtK *float64
}

// Decide reduces one task's sample grades, in sample order, to its
// Decision: one per mode (modeDecide).
type Decide func(samples []SampleGrade) (Decision, error)

// TrajectoryOptions name a frozen rollout run and how to grade it.
type TrajectoryOptions struct {
	Rollout string // a rollout run that ended ok, or failed or was interrupted with AllowIncomplete
	Dataset string // the directory rlgate data import wrote, holding gold.jsonl
	DBRoot  string // empty: the one recorded at import
	Metric  Metric
	Mode    string // recorded, with K: ModeGreedy, ModeMajority or ModePassK
	K       int    // pass@k's k; ignored in the other modes
	Run     string // the grading run; empty: <rollout>.<metric>-<mode>
	// Weights combine each sample's reward components into its total;
	// zero means DefaultWeights. They are recorded with the grading.
	Weights Weights
	// AllowIncomplete grades a rollout that ended failed or interrupted,
	// with (task, sample) pairs that have no finished episode: each such
	// sample is graded wrong (pred-error, no SQL), so every task of the
	// rollout stays in the denominator. The flag and the count are
	// recorded with the grading.
	AllowIncomplete bool
	// AllowDBMismatch, Progress: as in FileOptions. Databases is a check
	// this command already made (the rollout's), so no database is hashed
	// twice.
	AllowDBMismatch bool
	Progress        io.Writer
	Databases       *DatabaseCheck
}

// TrajectoryItem is the grade of one task of a rollout, as recorded in the
// outcomes entries: Item's fields, the task's outcome being the Decision
// (with sample 0 in the derived row, as in every mode), and the samples
// behind it.
type TrajectoryItem struct {
	Item
	Samples       int      `json:"samples"`
	ChosenSample  int      `json:"chosen_sample"`
	Votes         int      `json:"votes,omitempty"`
	PassAtK       *float64 `json:"pass_at_k,omitempty"`
	SampleCorrect []bool   `json:"sample_correct"`
	// SampleReward is each sample's reward total under the recorded
	// weights; ChosenReward the chosen sample's components.
	SampleReward []float64 `json:"sample_reward"`
	ChosenReward Reward    `json:"chosen_reward"`
	// The chosen sample's episode: how it ended and what it spent.
	StopReason    rollout.StopReason `json:"stop_reason"`
	Turns         int                `json:"turns"`
	SQLExecutions int                `json:"sql_executions"`
	TokensIn      int                `json:"tokens_in"`
	TokensOut     int                `json:"tokens_out"`
}

// TrajectoryStart is the body of a trajectory grading run's run.start: it
// names the frozen rollout by its run.end entry, the evaluation's
// protocol and task set, and the gold graded against. The audits read it
// back by field name.
type TrajectoryStart struct {
	ledger.RunStart
	Rollout        string          `json:"rollout"`
	RolloutEnd     int64           `json:"rollout_end_seq"`
	ProtocolDigest ledger.Digest   `json:"protocol_digest"`
	TaskSet        ledger.Digest   `json:"task_set"`
	Metric         Metric          `json:"metric"`
	Mode           string          `json:"mode"`
	K              int             `json:"k,omitempty"`
	Dataset        string          `json:"dataset"`
	TasksDigest    ledger.Digest   `json:"tasks_digest"`
	GoldDigest     ledger.Digest   `json:"gold_digest"`
	Options        RecordedOptions `json:"grader_options"`
	Weights        Weights         `json:"reward_weights"`
	// Set only when grading an incomplete rollout was allowed.
	AllowIncomplete bool `json:"allow_incomplete,omitempty"`
	Unfinished      int  `json:"unfinished_episodes,omitempty"`

	// Databases are the databases graded on, by digest, and the SQLite
	// version.
	Databases *DatabaseCheck `json:"database_check"`
}

type trajectoryEnd struct {
	gradeEnd
	PassAtK    *float64 `json:"pass_at_k,omitempty"`
	Unfinished int      `json:"unfinished_episodes,omitempty"`
}

// GradeTrajectories grades the final SQL of every episode of a rollout run
// that ended ok (or, with o.AllowIncomplete, ended otherwise) against the
// dataset's gold, reduces each task's samples under o.Mode, and records
// a grading run: its start (naming the rollout's run.end entry, which
// precedes it), one outcome per task and the totals. The gold is read
// only once the rollout is known to be frozen, and nothing is recorded
// until every task is graded, so an interrupted grading leaves no run
// behind; a grading run that fails once started is closed as failed.
func GradeTrajectories(ctx context.Context, l *ledger.Ledger, g *Grader, o TrajectoryOptions) (*TrajectorySummary, error) {
	r, err := l.RunStatus(ctx, o.Rollout)
	if err != nil {
		return nil, fmt.Errorf("grade rollout %s: %w", o.Rollout, err)
	}
	if r.EndedSeq == nil || (r.Status != records.StatusOK && !o.AllowIncomplete) {
		return nil, fmt.Errorf("grade rollout %s: the run is %s; only a finished rollout is graded. Try: rlgate rollout --run %s to finish it, or --allow-incomplete to grade it counting its unfinished episodes wrong",
			o.Rollout, r.Status, o.Rollout)
	}
	start, err := rollout.ReadStart(ctx, l, o.Rollout)
	if err != nil {
		return nil, err
	}
	if o.Mode != ModePassK {
		o.K = 0
	}
	if err := CheckMode(o.Mode, start.Protocol.Sampling.N, o.K); err != nil {
		return nil, fmt.Errorf("grade rollout %s: %w", o.Rollout, err)
	}
	man, err := dataset.ReadManifest(o.Dataset)
	if err != nil {
		return nil, err
	}
	if man.Tasks.Digest != start.TasksDigest {
		return nil, fmt.Errorf("grade rollout %s: it ran tasks %s, but %s holds tasks %s. Try: --tasks with the dataset the rollout used",
			o.Rollout, start.TasksDigest, o.Dataset, man.Tasks.Digest)
	}
	recs, err := rollout.ReadRecorded(ctx, l, o.Rollout)
	if err != nil {
		return nil, err
	}
	dbRoot := o.DBRoot
	if dbRoot == "" {
		dbRoot = man.DBRoot
	}
	n := start.Protocol.Sampling.N
	s := &TrajectorySummary{Run: o.Run, Rollout: o.Rollout, Metric: o.Metric, Mode: o.Mode, K: o.K, Dataset: man.Dataset,
		Skipped: len(man.Skipped), Warnings: []Warning{}, AllowIncomplete: o.AllowIncomplete, Unfinished: start.Count*n - len(recs)}
	s.Incomplete = s.Unfinished > 0
	if s.Run == "" {
		s.Run = fmt.Sprintf("%s.%s-%s", o.Rollout, o.Metric, o.Mode)
		if o.Mode == ModePassK {
			s.Run += fmt.Sprint(o.K)
		}
	}
	if _, err := l.RunStatus(ctx, s.Run); err == nil {
		return nil, &ledger.Error{Op: "grade rollout " + o.Rollout, Path: s.Run, Err: ledger.ErrRunExists,
			Hint: "rlgate log --run " + s.Run + " shows that grading; rlgate eval --grade-run ID grades again under another id"}
	}

	if o.Databases != nil {
		g.UseDatabases(o.Databases)
	}
	dbs, err := g.Databases(ctx, man, dbRoot, o.AllowDBMismatch, o.Progress)
	if err != nil {
		return nil, fmt.Errorf("grade rollout %s: %w", o.Rollout, err)
	}
	s.Databases = dbs

	// The gold is read only now, with the rollout frozen.
	golds, err := readGold(o.Dataset, man)
	if err != nil {
		return nil, err
	}
	if o.Weights == (Weights{}) {
		o.Weights = DefaultWeights()
	}
	grades, err := gradeSamples(ctx, g, o.Metric, dbRoot, golds, recs, o.Weights)
	if err != nil {
		return nil, err
	}
	var ran map[string]bool
	if s.Incomplete {
		if ran, err = rolloutTasks(golds, start); err != nil {
			return nil, fmt.Errorf("grade rollout %s: %w", o.Rollout, err)
		}
	}
	unfinished := Judgement{Metric: o.Metric, Verdict: VerdictPredError, Detail: "episode unfinished (transport failure): counted wrong"}
	if s.Items, err = decideTasks(golds, grades, n, modeDecide(o.Mode, o.K), ran, unfinished); err != nil {
		return nil, err
	}
	s.tally()

	run, err := l.StartRun(ctx, s.Run, TrajectoryStart{RunStart: ledger.RunStart{Stage: "grade"}, Rollout: o.Rollout, RolloutEnd: *r.EndedSeq,
		ProtocolDigest: start.ProtocolDigest, TaskSet: start.TaskSet, Metric: o.Metric, Mode: o.Mode, K: o.K, Dataset: man.Dataset,
		TasksDigest: man.Tasks.Digest, GoldDigest: man.Gold.Digest, Options: g.Options().Record(), Weights: o.Weights, Databases: dbs,
		AllowIncomplete: o.AllowIncomplete, Unfinished: s.Unfinished})
	if err != nil {
		return nil, err
	}
	s.StartSeq = run.Seq
	for i := 0; i < len(s.Items); i += outcomeBatch {
		batch := s.Items[i:min(i+outcomeBatch, len(s.Items))]
		if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: s.Run, Body: map[string]any{"items": batch}}); err != nil {
			run.Fail(context.WithoutCancel(ctx), err)
			return nil, err
		}
	}
	end, err := run.End(ctx, trajectoryEnd{gradeEnd: gradeEnd{RunEnd: ledger.RunEnd{Status: records.StatusOK}, Correct: s.Correct, Total: s.Total,
		ByDifficulty: s.ByDifficulty, GoldDefects: s.GoldDefects, Fragile: s.Fragile, Score: s.Score}, PassAtK: s.PassAtK, Unfinished: s.Unfinished})
	if err != nil {
		return nil, err
	}
	s.EndSeq = end.Seq
	return s, nil
}

// gradeSamples grades every recorded episode on all cores, in the order
// given.
func gradeSamples(ctx context.Context, g *Grader, m Metric, dbRoot string, golds []gold.Gold, recs []rollout.Recorded, w Weights) ([]SampleGrade, error) {
	byID := make(map[string]*gold.Gold, len(golds))
	for i := range golds {
		byID[golds[i].ID] = &golds[i]
	}
	for _, r := range recs {
		if byID[r.TaskID] == nil {
			return nil, fmt.Errorf("grade: task %s of the rollout has no gold", r.TaskID)
		}
	}
	out := make([]SampleGrade, len(recs))
	err := ledger.ForEach(ctx, len(recs), func(ctx context.Context, i int) error {
		r, gd := recs[i], byID[recs[i].TaskID]
		// A sample is well formed when it ended on a parsed <solution>.
		rw, err := g.Reward(ctx, RewardInput{Metric: m, DBPath: dataset.DBPath(dbRoot, gd.DBID), PredSQL: r.FinalSQL, GoldSQL: gd.SQL,
			WellFormed: r.StopReason == rollout.StopSolution}, w)
		if err != nil {
			return fmt.Errorf("grade %s sample %d: %w", r.TaskID, r.Sample, err)
		}
		o := rw.Outcome
		out[i] = SampleGrade{Episode: r.EpisodeRef, Outcome: o, Result: ResultKey(o.Pred), Reward: rw}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rolloutTasks names the tasks an incomplete rollout ran, some of which
// may have no finished episode: the first start.Count of the dataset, as
// rollout --limit takes them, which the recorded task set must confirm.
func rolloutTasks(golds []gold.Gold, start *rollout.Start) (map[string]bool, error) {
	if start.Count > len(golds) {
		return nil, fmt.Errorf("it ran %d tasks, the dataset has %d", start.Count, len(golds))
	}
	ids := make([]string, start.Count)
	ran := make(map[string]bool, start.Count)
	for i, gd := range golds[:start.Count] {
		ids[i], ran[gd.ID] = gd.ID, true
	}
	if tasks.SetDigest(ids) != start.TaskSet {
		return nil, fmt.Errorf("its task set %s is not the first %d tasks of the dataset, so the tasks without a finished episode cannot be named", start.TaskSet, start.Count)
	}
	return ran, nil
}

// decideTasks groups the grades by task, in gold order, and decides each
// task from its n samples. When ran is not nil it names every task of an
// incomplete rollout, and a sample without a finished episode is graded
// with the outcome unfinished.
func decideTasks(golds []gold.Gold, grades []SampleGrade, n int, decide Decide, ran map[string]bool, unfinished Judgement) ([]TrajectoryItem, error) {
	byTask := map[string][]SampleGrade{}
	for _, sg := range grades {
		byTask[sg.Episode.TaskID] = append(byTask[sg.Episode.TaskID], sg)
	}
	var items []TrajectoryItem
	for _, gd := range golds {
		samples := byTask[gd.ID]
		switch {
		case ran[gd.ID]:
			have := make([]bool, n)
			for _, sg := range samples {
				if sg.Episode.Sample < n {
					have[sg.Episode.Sample] = true
				}
			}
			for i := range n {
				if !have[i] {
					samples = append(samples, SampleGrade{Episode: rollout.EpisodeRef{TaskID: gd.ID, Sample: i, StopReason: rollout.StopTransport}, Outcome: unfinished})
				}
			}
		case samples == nil:
			continue // not in the rollout (--limit)
		}
		slices.SortFunc(samples, func(a, b SampleGrade) int { return a.Episode.Sample - b.Episode.Sample })
		if len(samples) != n || samples[n-1].Episode.Sample != n-1 {
			return nil, fmt.Errorf("grade: task %s has %d recorded samples, the protocol asks for %d", gd.ID, len(samples), n)
		}
		d, err := decide(samples)
		if err != nil {
			return nil, fmt.Errorf("grade %s: %w", gd.ID, err)
		}
		chosen := samples[d.Chosen]
		ep := chosen.Episode
		it := TrajectoryItem{
			Item: Item{Outcome: ledger.Outcome{TaskID: gd.ID, Correct: d.Correct, Reward: d.PassAtK}, Index: gd.Index, DBID: gd.DBID,
				Difficulty: gd.Difficulty, Verdict: chosen.Outcome.Verdict, Error: chosen.Outcome.Detail, Fragile: chosen.Outcome.Fragile,
				FragileReason: chosen.Outcome.FragileReason, Score: chosen.Outcome.Score},
			Samples: n, ChosenSample: d.Chosen, Votes: d.Votes, PassAtK: d.PassAtK, SampleCorrect: make([]bool, n),
			SampleReward: make([]float64, n), ChosenReward: chosen.Reward,
			StopReason: ep.StopReason, Turns: ep.Turns, SQLExecutions: ep.SQLExecutions, TokensIn: ep.TokensIn, TokensOut: ep.TokensOut,
		}
		for i, sg := range samples {
			it.SampleCorrect[i] = sg.Outcome.Correct
			it.SampleReward[i] = sg.Reward.Total
		}
		items = append(items, it)
	}
	return items, nil
}

// ResultKey names a result set as the seeds' majority vote groups them:
// the set of its rows (duplicates and order ignored) under Python
// equality (1 == 1.0). A failed query has the zero key.
func ResultKey(d Denotation) ledger.Digest {
	if d.Err != nil {
		return ledger.Digest{}
	}
	keys := rowKeys(d.Rows, pyKey)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	h := ledger.Hasher()
	var n [8]byte
	for _, k := range keys {
		binary.BigEndian.PutUint64(n[:], uint64(len(k)))
		h.Write(n[:])
		h.WriteString(k)
	}
	return ledger.SumDigest(h)
}
