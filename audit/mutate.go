package audit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/tasks"
)

// CheckGoldMutation passes when re-playing sampled tasks beside a mutated
// gold gives policy-visible streams byte-identical to the recorded ones.
const CheckGoldMutation = "gold-mutation"

// MutationEvidence backs CheckGoldMutation: what was re-played, which
// requests differed from the recorded ones, and how many grades the
// mutated gold changed (they may: the grader reads gold, the policy must
// not).
type MutationEvidence struct {
	Tasks         []string   `json:"tasks"`
	Episodes      int        `json:"episodes"`
	Requests      int        `json:"requests"`
	Differing     []Mutation `json:"differing"`
	GradesChanged int        `json:"grades_changed"`
	Endpoint      string     `json:"endpoint"` // "replay" or the live endpoint
}

// Mutation is a request of a re-played episode that differs from the
// recorded one, or that the recorded episode never sent.
type Mutation struct {
	TaskID string `json:"task_id"`
	Sample int    `json:"sample"`
	Turn   int    `json:"turn"`
	Seq    int64  `json:"seq"` // the trajectories entry of the recorded episode
}

// mutateGold is the gold a mutation check writes: the same query with no
// rows, so a prediction that matched the gold no longer does.
func mutateGold(sql string) string { return "SELECT * FROM (" + sql + ") WHERE 0" }

// goldMutation re-plays o.Mutate sampled tasks of an evaluation's rollout,
// every sample, in a scratch ledger, from a copy of its tasks whose gold
// beside them is mutated, against the recorded replies (an in-process
// replay endpoint) or o.MutateEndpoint at temperature 0, and compares
// every request body with the recorded one byte for byte. It grades the
// re-played final queries against both golds and reports how many grades
// the mutation changed.
func goldMutation(ctx context.Context, l *ledger.Ledger, r *Report, e *evalRun, golds map[string]string, o Options) error {
	p := e.rollout.Protocol
	endpoint := "replay"
	if o.MutateEndpoint != "" {
		if p.Sampling.Temperature != 0 {
			r.fail(CheckGoldMutation, nil, []int64{e.rolloutRun.StartedSeq}, "%s: rollout %s sampled at temperature %g; a live endpoint re-plays it only at 0. Leave out the endpoint to re-play the recorded replies",
				e.Label, e.grade.Rollout, p.Sampling.Temperature)
			return nil
		}
		endpoint = o.MutateEndpoint
	}
	recorded, err := rollout.ReadEpisodes(ctx, l, e.grade.Rollout)
	if err != nil {
		return err
	}
	refs, err := rollout.ReadRecorded(ctx, l, e.grade.Rollout)
	if err != nil {
		return err
	}
	all, err := (*scanCache)(nil).readTasks(ctx, l, e.rollout.Tasks, e.rollout.TasksDigest)
	if err != nil {
		r.fail(CheckGoldMutation, nil, []int64{e.rolloutRun.StartedSeq}, "%s: %v", e.Label, err)
		return nil
	}
	played := map[string]bool{}
	for _, ref := range refs {
		played[ref.TaskID] = true
	}
	all = slices.DeleteFunc(all, func(t tasks.Task) bool { return !played[t.ID] })
	slices.SortFunc(all, func(a, b tasks.Task) int {
		return cmp.Compare(ledger.Sum([]byte(a.ID)).String(), ledger.Sum([]byte(b.ID)).String())
	})
	picked := all[:min(o.Mutate, len(all))]

	// The mutated dataset: the tasks as recorded, the gold mutated beside
	// them; the re-played rollout reads its tasks from here.
	dir, err := os.MkdirTemp("", "rlgate-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ev := MutationEvidence{Endpoint: endpoint}
	var mutated []gold.Gold
	for _, t := range picked {
		ev.Tasks = append(ev.Tasks, t.ID)
		mutated = append(mutated, gold.Gold{ID: t.ID, Index: t.Index, DBID: t.DBID, SQL: mutateGold(golds[t.ID])})
	}
	if err := writeFile(filepath.Join(dir, dataset.TasksFile), func(f *os.File) error { return tasks.Write(f, picked) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, dataset.GoldFile), func(f *os.File) error { return gold.Write(f, mutated) }); err != nil {
		return err
	}

	if o.MutateEndpoint == "" {
		url, stop, err := serveReplay(ctx, l, e.grade.Rollout)
		if err != nil {
			return err
		}
		defer stop()
		endpoint = url
	}
	scratch, err := ledger.Init(ctx, filepath.Join(dir, "ledger"))
	if err != nil {
		return err
	}
	defer scratch.Close()
	// The databases where they lie now (--data-root), under the root the
	// rollout recorded.
	var rels []string
	for _, t := range picked {
		rels = append(rels, dataset.DBRel(t.DBID))
	}
	at := dataset.FindDir(ctx, e.rollout.DBRoot, rels)
	if _, err := rollout.Play(ctx, scratch, rollout.Options{Run: "mutate", Tasks: picked, TasksPath: filepath.Join(dir, dataset.TasksFile),
		TasksDigest: e.rollout.TasksDigest, DBRoot: e.rollout.DBRoot, DBPath: func(id string) string { return dataset.DBPath(at, id) },
		Endpoint: endpoint, Model: e.rollout.Model, Protocol: p, Concurrency: 4,
		Client: rollout.ClientOptions{RequestTimeout: time.Minute, MaxAttempts: 2}}); err != nil {
		return fmt.Errorf("audit gold: re-play %s: %w", e.grade.Rollout, err)
	}
	replayed, err := rollout.ReadEpisodes(ctx, scratch, "mutate")
	if err != nil {
		return err
	}

	type key struct {
		task         string
		sample, turn int
	}
	want := map[key][]byte{}
	seqOf := map[key]int64{} // turn -1: the episode
	for i, ep := range recorded {
		seqOf[key{ep.TaskID, ep.Sample, -1}] = refs[i].Seq
		for _, t := range ep.Turns {
			want[key{ep.TaskID, ep.Sample, t.Index}] = t.Request
		}
	}
	g := grading.NewGrader(grading.Options{}, nil)
	defer g.Close()
	var seqs []int64
	for _, ep := range replayed {
		ev.Episodes++
		for _, t := range ep.Turns {
			ev.Requests++
			k := key{ep.TaskID, ep.Sample, t.Index}
			if w, ok := want[k]; !ok || !bytes.Equal(w, t.Request) {
				seq := seqOf[key{ep.TaskID, ep.Sample, -1}]
				ev.Differing = append(ev.Differing, Mutation{TaskID: ep.TaskID, Sample: ep.Sample, Turn: t.Index, Seq: seq})
				seqs = append(seqs, seq)
			}
		}
		db := dataset.DBPath(at, ep.DBID)
		before, err1 := g.Grade(ctx, e.grade.Metric, db, ep.FinalSQL, golds[ep.TaskID])
		after, err2 := g.Grade(ctx, e.grade.Metric, db, ep.FinalSQL, mutateGold(golds[ep.TaskID]))
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if before.Correct != after.Correct {
			ev.GradesChanged++
		}
	}
	if len(ev.Differing) > 0 {
		d := ev.Differing[0]
		r.fail(CheckGoldMutation, ev, seqs, "%s: re-played beside a mutated gold, %d of %d requests of %d tasks differ from the recorded ones; first: task %s sample %d turn %d",
			e.Label, len(ev.Differing), ev.Requests, len(picked), d.TaskID, d.Sample, d.Turn)
		return nil
	}
	r.pass(CheckGoldMutation, ev, []int64{e.rolloutRun.StartedSeq}, "%s: %d tasks (%d episodes, %d requests) re-played beside a mutated gold are byte-identical to rollout %s; the mutation changed %d grades",
		e.Label, len(picked), ev.Episodes, ev.Requests, e.grade.Rollout, ev.GradesChanged)
	return nil
}

// serveReplay serves a recorded rollout on a loopback port until stop.
func serveReplay(ctx context.Context, l *ledger.Ledger, run string) (string, func(), error) {
	rp, err := rollout.NewReplay(ctx, l, run)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/v1", func() { srv.Close() }, nil
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
