package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	mstats "github.com/montanaflynn/stats"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/progress"
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
	DBPath func(dbID string) string
	// Endpoint is the OpenAI-compatible server played against; Endpoints,
	// given instead, a fleet of servers of the same model, each request
	// going to the one with the fewest requests in flight (see DrainAfter).
	Endpoint  string
	Endpoints []string
	Model     string
	APIKey    string // sent as a bearer token; never recorded
	Protocol  Protocol
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

	// ModelIdentity is the served checkpoint's model identity as the
	// user asserts it, or nil. The endpoints are asked which model they
	// serve first: an identity they report is recorded as the server's,
	// and one that differs from this refuses the run (ErrIdentity); when
	// they report none, this is recorded as asserted.
	ModelIdentity *ledger.Digest
}

// Summary is what a rollout reports.
type Summary struct {
	Run    string `json:"run"`
	Status string `json:"status"` // ok; complete when the run had finished before; failed (unfinished episodes, recording failed); interrupted
	// Resumed is set when the run existed, was interrupted or had failed,
	// and this command continued it.
	Resumed        bool          `json:"resumed"`
	ProtocolDigest ledger.Digest `json:"protocol_digest"`
	Tasks          int           `json:"tasks"`
	Samples        int           `json:"samples"`
	// Episodes counts the finished episodes recorded in the run, by any
	// command; Unfinished the (task, sample) pairs without one; Ran the
	// episodes this command played, finished or not, Skipped those it
	// found finished. StopReasons counts the finished episodes.
	Episodes     int                `json:"episodes"`
	Unfinished   int                `json:"unfinished"`
	Ran          int                `json:"ran"`
	Skipped      int                `json:"skipped"`
	StopReasons  map[StopReason]int `json:"stop_reasons"`
	TokensIn     int                `json:"tokens_in"`
	TokensOut    int                `json:"tokens_out"`
	DurationS    float64            `json:"duration_s"`
	EpisodesPerS float64            `json:"episodes_per_s"`
	StartSeq     int64              `json:"start_seq"`
	EndSeq       int64              `json:"end_seq"`
	// TokensInPerEpisode and TokensOutPerEpisode describe the prompt and
	// completion tokens of each finished episode of the run, as Tokens*
	// count them; RequestLatencyMS the time each turn this command played
	// waited on the endpoint, retries included. Nil when there is none.
	TokensInPerEpisode  *Spread `json:"tokens_in_per_episode,omitempty"`
	TokensOutPerEpisode *Spread `json:"tokens_out_per_episode,omitempty"`
	RequestLatencyMS    *Spread `json:"request_latency_ms,omitempty"`
	// Endpoints says what each endpoint did for this command, in the
	// order given; nil when nothing was played.
	Endpoints []EndpointStats `json:"endpoints,omitempty"`
}

// Spread describes N values: their mean, median and 95th percentile, the
// percentiles interpolated linearly between closest ranks as NumPy's
// percentile does by default, so a reader recomputes them in Python.
type Spread struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
}

// spreadOf describes xs; nil when xs is empty.
func spreadOf(xs []float64) *Spread {
	if len(xs) == 0 {
		return nil
	}
	s := &Spread{N: len(xs)}
	s.Mean, _ = mstats.Mean(xs) // no error: xs is not empty, and 50 and 95 are percents
	s.P50, _ = mstats.Percentile(xs, 50)
	s.P95, _ = mstats.Percentile(xs, 95)
	return s
}

type job struct {
	task   *tasks.Task
	sample int
}

// Play plays every (task, sample) of o against the endpoint and records
// the episodes in l under run o.Run. A new run id starts a run; an
// interrupted or failed run with the same settings is resumed, playing
// only the pairs without a finished episode; a run that ended ok is
// reported complete and nothing is played. Before a run is started or
// resumed, every endpoint is probed; an unusable one is an ErrEndpoint and
// records nothing, and so is an endpoint that serves another model than
// the one asserted or recorded (ErrIdentity; see resolveIdentity).
//
// Once started, the run is always closed: ok when every pair has a
// finished episode; failed, with the reason, when episodes ended on a
// transport failure (the error is then an ErrIncomplete) or recording
// failed; interrupted when ctx ended, after recording the episodes that
// finished. The summary comes with the error.
func Play(ctx context.Context, l *ledger.Ledger, o Options) (*Summary, error) {
	began := time.Now()
	start, err := o.start()
	if err != nil {
		return nil, err
	}
	s := &Summary{Run: o.Run, ProtocolDigest: start.ProtocolDigest, Tasks: len(o.Tasks), Samples: o.Protocol.Sampling.N}

	r, err := l.RunStatus(ctx, o.Run)
	exists := err == nil
	var prev *Start // of the run resumed
	switch {
	case errors.Is(err, ledger.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if prev, err = ReadStart(ctx, l, o.Run); err != nil {
			return nil, err
		}
		if err := sameEvaluation(prev, start); err != nil {
			return nil, fmt.Errorf("resume rollout %s: %w", o.Run, err)
		}
		if r.Status == records.StatusOK {
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
	cl := newClient(o.Endpoints, o.APIKey, o.Client, o.Concurrency)
	defer cl.close()
	reported, err := cl.probe(ctx, o.Model)
	if err != nil {
		return nil, fmt.Errorf("rollout %s: %w", o.Run, err)
	}
	if start.ModelIdentity, start.IdentitySource, err = resolveIdentity(o.ModelIdentity, cl.names(), reported); err != nil {
		return nil, fmt.Errorf("rollout %s: %w", o.Run, err)
	}
	var active *ledger.ActiveRun
	if exists {
		if err := sameIdentity(prev, start.ModelIdentity, start.IdentitySource); err != nil {
			return nil, fmt.Errorf("resume rollout %s: %w", o.Run, err)
		}
		body := resumeBody{Endpoint: start.Endpoint, Endpoints: start.Endpoints, Client: start.Client, Parallel: start.Parallel, Done: len(done)}
		if active, err = l.ResumeRun(ctx, o.Run, body); err != nil {
			return nil, err
		}
		s.Resumed = true
	} else if active, err = l.StartRun(ctx, o.Run, start); err != nil {
		return nil, err
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

	firstTransport, runErr := o.play(ctx, l, cl, jobs, s)
	s.Endpoints = cl.stats()
	// The run is closed even when ctx has ended: what finished is kept.
	endCtx := context.WithoutCancel(ctx)
	if err := s.tally(endCtx, l); err != nil {
		runErr = errors.Join(runErr, err)
	} else if runErr == nil && s.Unfinished > 0 {
		runErr = fmt.Errorf("rollout %s: %w: %d of %d episodes unfinished after transport failures (first: %s). Try: check the endpoint, then run the same command again to play them",
			o.Run, ErrIncomplete, s.Unfinished, s.Tasks*s.Samples, firstTransport)
	}
	end := End{RunEnd: ledger.RunEnd{Status: records.StatusOK}, Episodes: s.Episodes, Unfinished: s.Unfinished, StopReasons: s.StopReasons,
		TokensIn: s.TokensIn, TokensOut: s.TokensOut, Endpoints: s.Endpoints}
	switch {
	case runErr != nil && ctx.Err() != nil:
		end.Status = records.StatusInterrupted
	case runErr != nil:
		end.Status, end.Reason = records.StatusFailed, runErr.Error()
	}
	s.Status = string(end.Status)
	s.DurationS = time.Since(began).Seconds()
	s.EpisodesPerS = float64(s.Ran) / max(s.DurationS, 1e-9)
	e, err := active.End(endCtx, end)
	if err != nil {
		return s, errors.Join(runErr, err)
	}
	s.EndSeq = e.Seq
	return s, runErr
}

// play runs jobs on o.Concurrency workers and records the episodes. It
// returns the error of the first episode that ended on a transport
// failure, if any, and ctx's error when ctx ended first, or the
// recorder's.
func (o *Options) play(ctx context.Context, l *ledger.Ledger, cl *client, jobs []job, s *Summary) (string, error) {
	exec := sqlenv.NewExecutor(sqlenv.Options{Timeout: time.Duration(o.Protocol.SQLTimeoutMS) * time.Millisecond, MaxRows: o.Protocol.SQLMaxRows})
	defer exec.Close()
	e := &env{proto: &o.Protocol, model: o.Model, client: cl, exec: exec, dbPath: o.DBPath}

	rec := &recorder{l: l, run: o.Run, every: o.FlushEvery, max: o.FlushEpisodes, in: make(chan *Episode, o.FlushEpisodes), mask: cl.mask}
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

	prog := progress.Start(o.Progress, o.Terminal, o.ProgressEvery, "rollout", o.Run, "episodes", len(jobs))
	cl.drained = func(e EndpointStats, left int) {
		prog.Note("rollout %s: endpoint %s drained after %d transport failures in a row (last: %s); its requests go to the %d left",
			o.Run, e.Endpoint, DrainAfter, e.DrainError, left)
	}
	work := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstTransport string
	var latencies []float64
	for range min(o.Concurrency, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				ep, err := e.play(wctx, j.task, j.sample)
				if err != nil {
					continue // abandoned: ctx ended; a resume plays it again
				}
				prog.Done(ep.StopReason == StopHTTPError || ep.StopReason == StopTransport)
				mu.Lock()
				s.Ran++
				for _, tr := range ep.Turns {
					latencies = append(latencies, tr.LatencyMS)
				}
				if !ep.StopReason.Finished() && firstTransport == "" {
					firstTransport = ep.Error
				}
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
	prog.Finish()
	s.RequestLatencyMS = spreadOf(latencies)
	if err != nil {
		return firstTransport, err
	}
	return firstTransport, ctx.Err()
}

// start validates o, fills its defaults and builds the run.start body.
func (o *Options) start() (Start, error) {
	if err := o.Protocol.Validate(); err != nil {
		return Start{}, err
	}
	if o.Endpoint != "" {
		if len(o.Endpoints) > 0 {
			return Start{}, errors.New("rollout: give an endpoint or a list of them, not both")
		}
		o.Endpoints = []string{o.Endpoint}
	}
	if o.Run == "" || len(o.Endpoints) == 0 || o.Model == "" || o.DBPath == nil {
		return Start{}, errors.New("rollout: a run id, an endpoint, a model and a database path are required")
	}
	routes := map[string]bool{}
	for _, e := range o.Endpoints {
		if routes[completionsURL(e)] {
			return Start{}, fmt.Errorf("rollout %s: endpoint %s is given twice. Try: each server once", o.Run, ledger.Redact("", e))
		}
		routes[completionsURL(e)] = true
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
					o.Run, t.ID, sqlenv.ErrNoDatabase, o.DBPath(t.DBID))
			}
		}
	}
	pd, err := o.Protocol.Digest()
	if err != nil {
		return Start{}, err
	}
	var fleet []string
	if len(o.Endpoints) > 1 {
		for _, e := range o.Endpoints {
			fleet = append(fleet, ledger.Redact("", e))
		}
	}
	return Start{RunStart: ledger.RunStart{Stage: Stage}, Protocol: o.Protocol, ProtocolDigest: pd, Model: o.Model,
		Endpoint: ledger.Redact("", o.Endpoints[0]), Endpoints: fleet,
		Tasks: o.TasksPath, TasksDigest: o.TasksDigest, TaskSet: tasks.SetDigest(ids), Count: len(ids), DBRoot: o.DBRoot,
		Client: o.Client.record(), Parallel: o.Concurrency}, nil
}

// sameEvaluation refuses to continue a run under other settings. The
// endpoints (their number too), client options and concurrency may
// change: they do not change what the policy sees.
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
	s.Unfinished = s.Tasks*s.Samples - len(recs)
	s.StopReasons = map[StopReason]int{}
	s.TokensIn, s.TokensOut = 0, 0
	in, out := make([]float64, len(recs)), make([]float64, len(recs))
	for i, r := range recs {
		s.StopReasons[r.StopReason]++
		s.TokensIn += r.TokensIn
		s.TokensOut += r.TokensOut
		in[i], out[i] = float64(r.TokensIn), float64(r.TokensOut)
	}
	s.TokensInPerEpisode, s.TokensOutPerEpisode = spreadOf(in), spreadOf(out)
	return nil
}
