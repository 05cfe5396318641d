package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/stages/tasks"
)

// Stage is the stage name of a synthesis run's run.start entry.
const Stage = "synth"

// The files a synthesis writes into its output directory.
const (
	TrajectoriesFile = "trajectories.jsonl" // the kept trajectories (Trajectory), policy side only
	GoldFile         = "gold.jsonl"         // one GoldRecord per example with a kept trajectory, by example id
	ExampleIDsFile   = "example_ids.json"   // a JSON array of the sampled example ids, in task-file order
)

// Options describe one synthesis. Rollout holds the sampled tasks (Sample)
// and the rollout run; the grading and synthesis runs are named after it.
type Options struct {
	Rollout rollout.Options
	Dataset string // the imported dataset directory the tasks came from, holding the gold
	DBRoot  string // empty: the one recorded at import
	Metric  grade.Metric
	// NumExamples and Seed are how the tasks were sampled; recorded.
	NumExamples int
	Seed        int64
	Out         string // the output directory, created when missing
	// Databases is the database check already made for the rollout, so
	// grading does not hash them again; Progress as in grading.
	Databases *grade.DatabaseCheck
	Progress  io.Writer
}

// Start is the body of a synthesis run's run.start entry: the rollout and
// grading it kept trajectories from, the sampling, and the sampled example
// ids (ExampleIDs, the blob holding example_ids.json), which the split
// audit reads as the SFT side's task ids.
type Start struct {
	ledger.RunStart
	Rollout     string        `json:"rollout"`
	RolloutEnd  int64         `json:"rollout_end_seq"`
	Grading     string        `json:"grading"`
	GradingEnd  int64         `json:"grading_end_seq"`
	Dataset     string        `json:"dataset"`
	Tasks       string        `json:"tasks"`
	TasksDigest ledger.Digest `json:"tasks_digest"`
	Metric      grade.Metric  `json:"metric"`
	NumExamples int           `json:"num_examples"`
	Seed        int64         `json:"seed"`
	Examples    int           `json:"examples"`
	ExampleIDs  ledger.Digest `json:"task_ids"`
	Out         string        `json:"out"`
}

// End is the body of a synthesis run's run.end entry: what was kept, and
// the digest of every file written (as their artifact entries record them).
type End struct {
	ledger.RunEnd
	Episodes     int                      `json:"episodes"`
	Kept         int                      `json:"kept"`
	ExamplesKept int                      `json:"examples_kept"`
	Outputs      map[string]ledger.Digest `json:"outputs"`
}

// Summary is what a synthesis reports.
type Summary struct {
	Run string `json:"run"`
	// Status is ok, or complete when the synthesis had been recorded
	// before and the files were written again, equal to the recorded ones.
	Status       string                   `json:"status"`
	Rollout      *rollout.Summary         `json:"rollout"`
	Grading      string                   `json:"grading"`
	Examples     int                      `json:"examples"`
	Episodes     int                      `json:"episodes"`
	Kept         int                      `json:"kept"`
	ExamplesKept int                      `json:"examples_kept"`
	Out          string                   `json:"out"`
	Outputs      map[string]ledger.Digest `json:"outputs"`
	StartSeq     int64                    `json:"start_seq"`
	EndSeq       int64                    `json:"end_seq"`
}

// Synthesize plays the rollout (resuming it as rollout.Play does), grades its
// frozen trajectories under o.Metric (a grading run in passk mode, which
// records every sample's verdict), keeps the episodes whose final SQL
// passed, writes them with the gold and the sampled ids into o.Out, and
// records a synthesis run with the files as outputs. Synthesize again after a
// failure, it resumes the rollout, reuses a grading already recorded and
// rewrites the files; a synthesis already recorded must come out equal.
func Synthesize(ctx context.Context, l *ledger.Ledger, g *grade.Grader, o Options) (*Summary, error) {
	run := o.Rollout.Run + ".synth"
	s := &Summary{Run: run, Examples: len(o.Rollout.Tasks), Out: o.Out}
	rs, err := rollout.Play(ctx, l, o.Rollout)
	s.Rollout = rs
	if err != nil {
		return s, err
	}
	rr, err := l.RunStatus(ctx, o.Rollout.Run)
	if err != nil {
		return s, err
	}
	gradeRun, gradeEnd, err := graded(ctx, l, g, o, *rr.EndedSeq)
	if err != nil {
		return s, err
	}
	s.Grading = gradeRun
	passed, err := readPassed(ctx, l, gradeRun)
	if err != nil {
		return s, err
	}
	refs, err := rollout.ReadRecorded(ctx, l, o.Rollout.Run)
	if err != nil {
		return s, err
	}
	s.Episodes = len(refs)
	// Only the passing episodes are read from the blobs.
	refs = slices.DeleteFunc(refs, func(r rollout.Recorded) bool {
		ok := passed[r.TaskID]
		return r.StopReason != rollout.StopSolution || r.Sample >= len(ok) || !ok[r.Sample]
	})
	eps, err := rollout.ReadEpisodesOf(l, o.Rollout.Run, refs)
	if err != nil {
		return s, err
	}

	golds, err := gold.Read(filepath.Join(o.Dataset, dataset.GoldFile))
	if err != nil {
		return s, err
	}
	kept, goldRecs, ids := keep(o.Rollout.Tasks, eps, golds, &o.Rollout.Protocol)
	s.Kept, s.ExamplesKept = len(kept), len(goldRecs)
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return s, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return s, fmt.Errorf("synth: %w", err)
	}
	writes := []struct {
		name  string
		write func(io.Writer) error
	}{
		{TrajectoriesFile, func(w io.Writer) error { return jsonl.Write(w, kept) }},
		{GoldFile, func(w io.Writer) error { return jsonl.Write(w, goldRecs) }},
		{ExampleIDsFile, func(w io.Writer) error { _, err := w.Write(append(idsJSON, '\n')); return err }},
	}
	var recs []ledger.Record
	s.Outputs = map[string]ledger.Digest{}
	for _, f := range writes {
		path := filepath.Join(o.Out, f.name)
		if err := jsonl.WriteFile(path, f.write); err != nil {
			return s, err
		}
		r, d, err := runner.OutputRecord(ctx, l, run, f.name, path)
		if err != nil {
			return s, err
		}
		recs, s.Outputs[f.name] = append(recs, r), d
	}

	switch prev, err := runner.SameOutputs(ctx, l, run, s.Outputs); {
	case err == nil:
		s.Status, s.StartSeq, s.EndSeq = "complete", prev.StartedSeq, *prev.EndedSeq
		return s, nil
	case !errors.Is(err, ledger.ErrNotFound):
		return s, fmt.Errorf("synth: %w", err)
	}
	idsBlob, err := l.PutBlobBytes(append(idsJSON, '\n'))
	if err != nil {
		return s, err
	}
	start := Start{RunStart: ledger.RunStart{Stage: Stage}, Rollout: o.Rollout.Run, RolloutEnd: *rr.EndedSeq, Grading: gradeRun, GradingEnd: gradeEnd,
		Dataset: o.Dataset, Tasks: o.Rollout.TasksPath, TasksDigest: o.Rollout.TasksDigest, Metric: o.Metric, NumExamples: o.NumExamples,
		Seed: o.Seed, Examples: len(ids), ExampleIDs: idsBlob, Out: o.Out}
	active, err := l.StartRun(ctx, run, start, idsBlob)
	if err != nil {
		return s, err
	}
	s.StartSeq = active.Seq
	if _, err := l.Append(ctx, recs...); err != nil {
		active.Fail(context.WithoutCancel(ctx), err)
		return s, err
	}
	e, err := active.End(ctx, End{RunEnd: ledger.RunEnd{Status: records.StatusOK}, Episodes: s.Episodes, Kept: s.Kept, ExamplesKept: s.ExamplesKept, Outputs: s.Outputs})
	if err != nil {
		return s, err
	}
	s.Status, s.EndSeq = string(records.StatusOK), e.Seq
	return s, nil
}

// graded returns the grading run of the frozen rollout, recording it when
// none is: <rollout>.<metric>-passk1. A grading recorded before must be of
// this very rollout end.
func graded(ctx context.Context, l *ledger.Ledger, g *grade.Grader, o Options, rolloutEnd int64) (string, int64, error) {
	run := fmt.Sprintf("%s.%s-%s1", o.Rollout.Run, o.Metric, grade.ModePassK)
	r, err := l.RunStatus(ctx, run)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		ts, err := grade.GradeTrajectories(ctx, l, g, grade.TrajectoryOptions{Rollout: o.Rollout.Run, Dataset: o.Dataset, DBRoot: o.DBRoot,
			Metric: o.Metric, Mode: grade.ModePassK, K: 1, Run: run, Progress: o.Progress, Databases: o.Databases})
		if err != nil {
			return "", 0, err
		}
		return run, ts.EndSeq, nil
	case err != nil:
		return "", 0, err
	case !r.EndedOK():
		return "", 0, fmt.Errorf("synth: grading %s is %s. Try: another --run", run, r.Status)
	}
	e, err := l.EntryBySeq(ctx, r.StartedSeq)
	if err != nil {
		return "", 0, err
	}
	var start grade.TrajectoryStart
	if err := json.Unmarshal(e.Body, &start); err != nil {
		return "", 0, fmt.Errorf("synth: grading %s: %w", run, err)
	}
	if start.Rollout != o.Rollout.Run || start.RolloutEnd != rolloutEnd {
		return "", 0, fmt.Errorf("synth: grading %s graded rollout %s ending at entry %d, not %s ending at %d", run, start.Rollout, start.RolloutEnd, o.Rollout.Run, rolloutEnd)
	}
	return run, *r.EndedSeq, nil
}

// readPassed reads a recorded grading's per-sample verdicts: for each task,
// which samples' final SQL passed.
func readPassed(ctx context.Context, l *ledger.Ledger, run string) (map[string][]bool, error) {
	out := map[string][]bool{}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindOutcomes, Run: run}) {
		if err != nil {
			return nil, err
		}
		var b struct {
			Items []grade.TrajectoryItem `json:"items"`
		}
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return nil, fmt.Errorf("read grading %s: entry %d: %w", run, e.Seq, err)
		}
		for _, it := range b.Items {
			out[it.TaskID] = it.SampleCorrect
		}
	}
	return out, nil
}

// keep turns the passing episodes into trajectories, in task order then
// sample order, with the gold of each example that kept one, and lists the
// sampled example ids.
func keep(ts []tasks.Task, passing []rollout.Episode, golds []gold.Gold, p *rollout.Protocol) ([]Trajectory, []GoldRecord, []string) {
	byTask := map[string][]*rollout.Episode{}
	for i := range passing {
		byTask[passing[i].TaskID] = append(byTask[passing[i].TaskID], &passing[i])
	}
	goldByID := make(map[string]*gold.Gold, len(golds))
	for i := range golds {
		goldByID[golds[i].ID] = &golds[i]
	}
	kept, goldRecs, ids := []Trajectory{}, []GoldRecord{}, make([]string, len(ts))
	for i := range ts {
		t := &ts[i]
		ids[i] = t.ID
		mine := byTask[t.ID]
		if len(mine) == 0 {
			continue
		}
		slices.SortFunc(mine, func(a, b *rollout.Episode) int { return a.Sample - b.Sample })
		for _, ep := range mine {
			kept = append(kept, FromEpisode(t, ep, p))
		}
		if gd := goldByID[t.ID]; gd != nil {
			goldRecs = append(goldRecs, GoldRecord{ExampleID: t.ID, DBID: gd.DBID, GoldSQL: gd.SQL})
		}
	}
	return kept, goldRecs, ids
}

// FromEpisode is the trajectory of an episode of task t played under p:
// the prompts as p renders them for t, and each well-formed reply with the
// message that answered it as p rendered it then. Malformed replies and
// their correction prompts are left out: a trajectory shows the protocol
// followed.
func FromEpisode(t *tasks.Task, ep *rollout.Episode, p *rollout.Protocol) Trajectory {
	tr := Trajectory{DBID: t.DBID, ExampleID: t.ID, SampleID: ep.Sample, System: p.SystemPrompt(t), BasePrompt: p.UserPrompt(t), Turns: []Turn{}}
	for _, turn := range ep.Turns {
		if turn.FormatError != "" || turn.Error != "" || turn.OverBudget {
			continue
		}
		out := Turn{Turn: turn.Index, Think: turn.Think, SQL: turn.SQL, Solution: turn.Solution,
			IsFinal: ep.StopReason == rollout.StopSolution && turn.Index == len(ep.Turns)-1}
		if turn.SQL != "" && turn.SQLStatus != "not_run" {
			out.Observation = p.ObservationMessage(turn.Observation, p.MaxTurns-(turn.Index+1))
		}
		tr.Turns = append(tr.Turns, out)
	}
	return tr
}

// DefaultRun names the rollout run of a synthesis after what fixes it: the
// tasks file, the sampled task set, the model and the protocol (sampling
// included). The same command line therefore finds its run again and
// resumes it, and a synthesis under other settings gets a run of its own.
func DefaultRun(ro *rollout.Options) (string, error) {
	pd, err := ro.Protocol.Digest()
	if err != nil {
		return "", err
	}
	ids := make([]string, len(ro.Tasks))
	for i, t := range ro.Tasks {
		ids[i] = t.ID
	}
	b, err := ledger.CanonicalJSON(map[string]any{"tasks": ro.TasksDigest, "task_set": tasks.SetDigest(ids), "model": ro.Model, "protocol": pd})
	if err != nil {
		return "", err
	}
	return "synth-" + ledger.Sum(b).Hex()[:12], nil
}

// DefaultMetric is the execution match a dataset's own evaluator uses:
// spider for Spider imports, bird for the others.
func DefaultMetric(kind string) grade.Metric {
	if kind == "spider" {
		return grade.MetricSpider
	}
	return grade.MetricBird
}
