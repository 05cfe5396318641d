package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
)

// Options describe one rollout.
type Options struct {
	Run         string
	Tasks       []tasks.Task  // the tasks to run, in order; every one gets Protocol.Sampling.N episodes
	TasksPath   string        // where they were read from, recorded
	TasksDigest ledger.Digest // digest of that file, recorded and compared on resume
	DBRoot      string        // recorded
	// DBPath maps a task's db_id to its SQLite file.
	DBPath   func(dbID string) string
	Endpoint string
	Model    string
	APIKey   string // sent as a bearer token; never recorded
	Protocol Protocol
	// Concurrency is the number of episodes played at once; default 8.
	Concurrency int
	Client      ClientOptions
	// FlushEvery and FlushEpisodes bound what a crash can lose; defaults
	// DefaultFlushEvery and DefaultFlushEpisodes.
	FlushEvery    time.Duration
	FlushEpisodes int
	// Progress receives progress reports when not nil: a bar redrawn in
	// place when Terminal is set, else a plain line every ProgressEvery
	// (default 10 s).
	Progress      io.Writer
	Terminal      bool
	ProgressEvery time.Duration

	// ModelIdentity is the served checkpoint's model identity; recorded
	// when not nil.
	ModelIdentity *ledger.Digest
}

// Summary is what a rollout reports.
type Summary struct {
	Run    string `json:"run"`
	Status string `json:"status"` // ok; complete when the run had finished before; interrupted
	// Resumed is set when the run existed, was interrupted or had failed,
	// and this command continued it.
	Resumed        bool          `json:"resumed"`
	ProtocolDigest ledger.Digest `json:"protocol_digest"`
	Tasks          int           `json:"tasks"`
	Samples        int           `json:"samples"`
	// Episodes counts the episodes recorded in the run, by any command;
	// Ran those this command played, Skipped those it found recorded.
	Episodes     int                `json:"episodes"`
	Ran          int                `json:"ran"`
	Skipped      int                `json:"skipped"`
	StopReasons  map[StopReason]int `json:"stop_reasons"`
	TokensIn     int                `json:"tokens_in"`
	TokensOut    int                `json:"tokens_out"`
	DurationS    float64            `json:"duration_s"`
	EpisodesPerS float64            `json:"episodes_per_s"`
	StartSeq     int64              `json:"start_seq"`
	EndSeq       int64              `json:"end_seq"`
}

type job struct {
	task   *tasks.Task
	sample int
}

// Run plays every (task, sample) of o against the endpoint and records
// the episodes in l under run o.Run. A new run id starts a run; an
// interrupted or failed run with the same settings is resumed, skipping
// the episodes it recorded; a run that ended ok is reported complete and
// nothing is played. When ctx ends, the episodes that finished are
// recorded, the run is closed as interrupted, and the context's error is
// returned with the summary.
func Run(ctx context.Context, l *ledger.Ledger, o Options) (*Summary, error) {
	began := time.Now()
	start, err := o.start()
	if err != nil {
		return nil, err
	}
	s := &Summary{Run: o.Run, ProtocolDigest: start.ProtocolDigest, Tasks: len(o.Tasks), Samples: o.Protocol.Sampling.N}

	var active *ledger.ActiveRun
	r, err := l.RunStatus(ctx, o.Run)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		if active, err = l.StartRun(ctx, o.Run, start); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		prev, err := ReadStart(ctx, l, o.Run)
		if err != nil {
			return nil, err
		}
		if err := sameEvaluation(prev, start); err != nil {
			return nil, fmt.Errorf("resume rollout %s: %w", o.Run, err)
		}
		if r.Status == "ok" {
			s.Status = "complete"
			s.StartSeq = r.StartedSeq
			if r.EndedSeq != nil {
				s.EndSeq = *r.EndedSeq
			}
			return s, s.tally(ctx, l)
		}
	}
	done, err := ReadRecorded(ctx, l, o.Run)
	if err != nil {
		return nil, err
	}
	if active == nil {
		body := resumeBody{Endpoint: start.Endpoint, Client: start.Client, Parallel: start.Parallel, Done: len(done)}
		if active, err = l.ResumeRun(ctx, o.Run, body); err != nil {
			return nil, err
		}
		s.Resumed = true
	}
	s.StartSeq = active.Seq
	s.Skipped = len(done)

	recorded := make(map[episodeKey]bool, len(done))
	for _, d := range done {
		recorded[episodeKey{d.TaskID, d.Sample}] = true
	}
	var jobs []job
	for i := range o.Tasks {
		for sample := range o.Protocol.Sampling.N {
			if !recorded[episodeKey{o.Tasks[i].ID, sample}] {
				jobs = append(jobs, job{&o.Tasks[i], sample})
			}
		}
	}

	playErr := o.play(ctx, l, jobs, s)
	// The run is closed even when ctx has ended: what finished is kept.
	endCtx := context.WithoutCancel(ctx)
	status := "ok"
	switch {
	case playErr != nil && ctx.Err() != nil:
		status = "interrupted"
	case playErr != nil:
		status = "failed"
	}
	s.Status = status
	if err := s.tally(endCtx, l); err != nil {
		return s, errors.Join(playErr, err)
	}
	s.DurationS = time.Since(began).Seconds()
	s.EpisodesPerS = float64(s.Ran) / max(s.DurationS, 1e-9)
	end, err := active.End(endCtx, End{RunEnd: ledger.RunEnd{Status: status}, Episodes: s.Episodes, StopReasons: s.StopReasons,
		TokensIn: s.TokensIn, TokensOut: s.TokensOut})
	if err != nil {
		return s, errors.Join(playErr, err)
	}
	s.EndSeq = end.Seq
	return s, playErr
}

// play runs jobs on o.Concurrency workers and records the episodes. It
// returns ctx's error when ctx ended first, or the recorder's.
func (o *Options) play(ctx context.Context, l *ledger.Ledger, jobs []job, s *Summary) error {
	exec := sqlenv.NewExecutor(sqlenv.Options{Timeout: time.Duration(o.Protocol.SQLTimeoutMS) * time.Millisecond, MaxRows: o.Protocol.SQLMaxRows})
	defer exec.Close()
	cl := newClient(o.Endpoint, o.APIKey, o.Client, o.Concurrency)
	defer cl.close()
	e := &env{proto: &o.Protocol, model: o.Model, client: cl, exec: exec, dbPath: o.DBPath}

	rec := &recorder{l: l, run: o.Run, every: o.FlushEvery, max: o.FlushEpisodes, in: make(chan *Episode, o.FlushEpisodes)}
	recErr := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		err := rec.loop(context.WithoutCancel(ctx))
		if err != nil {
			cancel() // stop the workers: nothing more can be recorded
			for range rec.in {
			}
		}
		recErr <- err
	}()

	prog := newProgress(o.Progress, o.Terminal, o.ProgressEvery, o.Run, len(jobs))
	work := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range min(o.Concurrency, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				ep, err := e.play(wctx, j.task, j.sample)
				if err != nil {
					continue // abandoned: ctx ended; a resume plays it again
				}
				prog.episode(ep)
				mu.Lock()
				s.Ran++
				mu.Unlock()
				rec.in <- ep
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case work <- j:
		case <-wctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(rec.in)
	err := <-recErr
	prog.finish()
	if err != nil {
		return err
	}
	return ctx.Err()
}

// start validates o, fills its defaults and builds the run.start body.
func (o *Options) start() (Start, error) {
	if err := o.Protocol.Validate(); err != nil {
		return Start{}, err
	}
	if o.Run == "" || o.Endpoint == "" || o.Model == "" || o.DBPath == nil {
		return Start{}, errors.New("rollout: a run id, an endpoint, a model and a database path are required")
	}
	if len(o.Tasks) == 0 {
		return Start{}, fmt.Errorf("rollout %s: no tasks", o.Run)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = DefaultFlushEvery
	}
	if o.FlushEpisodes <= 0 {
		o.FlushEpisodes = DefaultFlushEpisodes
	}
	o.Client = o.Client.withDefaults()
	ids := make([]string, len(o.Tasks))
	seen, dbs := make(map[string]bool, len(o.Tasks)), map[string]bool{}
	for i, t := range o.Tasks {
		if seen[t.ID] {
			return Start{}, fmt.Errorf("rollout %s: task %s appears twice", o.Run, t.ID)
		}
		seen[t.ID] = true
		ids[i] = t.ID
		if !dbs[t.DBID] {
			dbs[t.DBID] = true
			if fi, err := os.Stat(o.DBPath(t.DBID)); err != nil || !fi.Mode().IsRegular() {
				return Start{}, fmt.Errorf("rollout %s: task %s: %w: %s. Try: --db-root DIR holding <db_id>/<db_id>.sqlite",
					o.Run, t.ID, ErrNoDatabase, o.DBPath(t.DBID))
			}
		}
	}
	pd, err := o.Protocol.Digest()
	if err != nil {
		return Start{}, err
	}
	return Start{RunStart: ledger.RunStart{Stage: Stage}, Protocol: o.Protocol, ProtocolDigest: pd, Model: o.Model, Endpoint: o.Endpoint,
		Tasks: o.TasksPath, TasksDigest: o.TasksDigest, TaskSet: tasks.SetDigest(ids), Count: len(ids), DBRoot: o.DBRoot,
		Client: o.Client.record(), Parallel: o.Concurrency, ModelIdentity: o.ModelIdentity}, nil
}

// sameEvaluation refuses to continue a run under other settings. The
// endpoint, client options and concurrency may change: they do not change
// what the policy sees.
func sameEvaluation(prev *Start, cur Start) error {
	switch {
	case prev.ProtocolDigest != cur.ProtocolDigest:
		return fmt.Errorf("%w: protocol %s, now %s. Try: the same --protocol and sampling flags, or another --run", ErrRunMismatch, prev.ProtocolDigest, cur.ProtocolDigest)
	case prev.Model != cur.Model:
		return fmt.Errorf("%w: model %q, now %q. Try: --model %s, or another --run", ErrRunMismatch, prev.Model, cur.Model, prev.Model)
	case prev.TasksDigest != cur.TasksDigest:
		return fmt.Errorf("%w: tasks %s, now %s. Try: the same --tasks, or another --run", ErrRunMismatch, prev.TasksDigest, cur.TasksDigest)
	case prev.TaskSet != cur.TaskSet:
		return fmt.Errorf("%w: %d tasks, now %d or others. Try: the same --limit, or another --run", ErrRunMismatch, prev.Count, cur.Count)
	}
	return nil
}

// tally fills the run-wide totals from the run's trajectories entries.
func (s *Summary) tally(ctx context.Context, l *ledger.Ledger) error {
	recs, err := ReadRecorded(ctx, l, s.Run)
	if err != nil {
		return err
	}
	s.Episodes = len(recs)
	s.StopReasons = map[StopReason]int{}
	s.TokensIn, s.TokensOut = 0, 0
	for _, r := range recs {
		s.StopReasons[r.StopReason]++
		s.TokensIn += r.TokensIn
		s.TokensOut += r.TokensOut
	}
	return nil
}
