package train

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
	"golang.org/x/sync/singleflight"
)

// Task is one training question: its id, database, the prompt the policy
// reads (rendered by the default protocol, as a rollout renders it) and,
// for GRPO's reward, its gold SQL.
type Task struct {
	ID     string
	DBID   string
	DBPath string
	Prompt refpolicy.Prompt
	Gold   string
}

// LoadTasks reads an rlgate data import directory (tasks.jsonl, gold.jsonl,
// manifest.json); dbRoot, when not empty, overrides the manifest's
// database root.
func LoadTasks(dir, dbRoot string) ([]Task, error) {
	man, err := dataset.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if dbRoot == "" {
		dbRoot = man.DBRoot
	}
	ts, err := tasks.Read(filepath.Join(dir, dataset.TasksFile))
	if err != nil {
		return nil, err
	}
	gs, err := gold.Read(filepath.Join(dir, dataset.GoldFile))
	if err != nil {
		return nil, err
	}
	golds := make(map[string]string, len(gs))
	for _, g := range gs {
		golds[g.ID] = g.SQL
	}
	proto := rollout.DefaultProtocol()
	out := make([]Task, 0, len(ts))
	checked := map[string]bool{}
	for i := range ts {
		t := &ts[i]
		g, ok := golds[t.ID]
		if !ok {
			return nil, fmt.Errorf("load tasks %s: task %s has no gold in %s", dir, t.ID, dataset.GoldFile)
		}
		if !checked[t.DBID] {
			if _, err := os.Stat(dataset.DBPath(dbRoot, t.DBID)); err != nil {
				return nil, fmt.Errorf("load tasks %s: task %s: database %s: %w. Try: --db-root naming the directory that holds <db_id>/<db_id>.sqlite", dir, t.ID, t.DBID, err)
			}
			checked[t.DBID] = true
		}
		out = append(out, Task{ID: t.ID, DBID: t.DBID, DBPath: dataset.DBPath(dbRoot, t.DBID), Prompt: refpolicy.ParsePrompt(proto.UserPrompt(t)), Gold: g})
	}
	return out, nil
}

// Env executes the policy's queries and grades its answers, remembering
// both: the same query on the same database is run once, and the same
// answer to a task graded once. The samples of a group are played at
// the same time and open with the same value probe, so a query or answer
// that is being worked on is waited for, not started again.
type Env struct {
	proto  rollout.Protocol
	metric grade.Metric
	exec   *sqlenv.Executor
	grader *grade.Grader

	mu      sync.Mutex
	obs     map[[2]string]string
	rewards map[[2]string]judgement
	// observing and judging hold the queries and answers in progress.
	observing, judging singleflight.Group
}

// judgement is an answer's grade: whether it is correct, and its reward.
type judgement struct {
	correct bool
	reward  float64
}

// NewEnv returns an environment that renders observations as the default
// protocol does and grades under metric m. The reward is execution match
// (1 or 0), except under a metric that scores items (grade.Judgement.Score:
// bird-softf1), where it is that score, BIRD's Soft-F1 in [0, 1].
func NewEnv(m grade.Metric) *Env {
	proto := rollout.DefaultProtocol()
	return &Env{
		proto:   proto,
		metric:  m,
		exec:    sqlenv.NewExecutor(sqlenv.Options{Timeout: time.Duration(proto.SQLTimeoutMS) * time.Millisecond, MaxRows: proto.SQLMaxRows}),
		grader:  grade.NewGrader(grade.Options{}, nil),
		obs:     map[[2]string]string{},
		rewards: map[[2]string]judgement{},
	}
}

// Close releases the database connections.
func (e *Env) Close() error {
	e.grader.Close()
	return e.exec.Close()
}

// MaxTurns is the protocol's turn budget.
func (e *Env) MaxTurns() int { return e.proto.MaxTurns }

// Observe runs q on the database as the rollout's environment does and
// returns the observation text.
func (e *Env) Observe(ctx context.Context, dbPath, q string) string {
	o, _ := remember(&e.mu, e.obs, &e.observing, [2]string{dbPath, q}, func() (string, error) {
		res, err := e.exec.Execute(ctx, dbPath, q)
		return sqlenv.RenderObservation(res, err, sqlenv.ObservationOptions{MaxRows: e.proto.Observation.MaxRows, MaxCellRunes: e.proto.Observation.MaxCellRunes}), nil
	})
	return o
}

// remember returns m[key] (m guarded by mu), computing it once: a caller
// that finds it being computed in g waits for that. An error is returned,
// not remembered.
func remember[V any](mu *sync.Mutex, m map[[2]string]V, g *singleflight.Group, key [2]string, compute func() (V, error)) (V, error) {
	lookup := func() (V, bool) {
		mu.Lock()
		defer mu.Unlock()
		v, ok := m[key]
		return v, ok
	}
	if v, ok := lookup(); ok {
		return v, nil
	}
	// The first part of the key is prefixed with its length, so two keys
	// never name the same flight.
	v, err, _ := g.Do(strconv.Itoa(len(key[0]))+":"+key[0]+key[1], func() (any, error) {
		if v, ok := lookup(); ok { // computed since the look above
			return v, nil
		}
		v, err := compute()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		m[key] = v
		mu.Unlock()
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

// Situation returns the candidates of t as the policy sees them once its
// value probe is answered.
func (e *Env) Situation(ctx context.Context, t *Task) *refpolicy.Situation {
	var probed string
	if probe := refpolicy.ProbeSQL(&t.Prompt); probe != "" {
		probed = e.Observe(ctx, t.DBPath, probe)
	}
	return refpolicy.NewSituation(&t.Prompt, probed)
}

// Reward is the reward of answering t with q: 1 or 0 for execution match
// under the env's metric, or the metric's score of the answer (NewEnv).
func (e *Env) Reward(ctx context.Context, t *Task, q string) (float64, error) {
	j, err := e.judge(ctx, t, q)
	return j.reward, err
}

// Correct reports whether the grader calls q a correct answer to t
// (execution match), whatever the reward.
func (e *Env) Correct(ctx context.Context, t *Task, q string) (bool, error) {
	j, err := e.judge(ctx, t, q)
	return j.correct, err
}

// judge grades q against t's gold once per (task, query).
func (e *Env) judge(ctx context.Context, t *Task, q string) (judgement, error) {
	return remember(&e.mu, e.rewards, &e.judging, [2]string{t.ID, q}, func() (judgement, error) {
		out, err := e.grader.Grade(ctx, e.metric, t.DBPath, q, t.Gold)
		if err != nil {
			return judgement{}, fmt.Errorf("reward %s: %w", t.ID, err)
		}
		j := judgement{correct: out.Correct}
		switch {
		case out.Score != nil:
			j.reward = *out.Score
		case out.Correct:
			j.reward = 1
		}
		return j, nil
	})
}

// Play runs one episode of pol on t in process, as a rollout against the
// served policy would, and returns its final decision and reply tokens.
func (e *Env) Play(ctx context.Context, pol *refpolicy.Model, t *Task, s refpolicy.Sampler) (refpolicy.Decision, int) {
	return pol.Play(&t.Prompt, e.proto.MaxTurns, s, func(q string) string { return e.Observe(ctx, t.DBPath, q) })
}
