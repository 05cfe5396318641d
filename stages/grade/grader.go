package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// Options are the grader's budgets and caps. The executor's options are
// embedded as they are, not renamed: Timeout bounds each query under the
// spider and strict rules (the Spider test-suite's exec_eval.py,
// taoyds/test-suite-sql-eval, sets TIMEOUT = 60 for exec_on_db, whose
// asyncio.wait_for around a blocking call never fires; we keep its value
// as a real limit); MaxRows and MaxBytes cap a result, and a query over
// them counts as failed (ErrResultTooLarge: the official evaluators have
// no cap; ours bounds memory, with SQLite's heap limits,
// sqlenv.HeapHardLimit); MaxConns is the connections per database. The
// grader gives its executor the larger of Timeout and BirdBudget, values
// up to 8 MiB unless MaxValueLength says otherwise, and Immutable: graded
// databases are inputs, hashed and frozen for the grading. A zero field
// takes its value from DefaultOptions, else from sqlenv's.
type Options struct {
	sqlenv.Options
	// BirdBudget is the time the bird rule gives prediction and gold
	// together (evaluation_ex.py's meta_time_out).
	BirdBudget time.Duration
}

// DefaultOptions: the official evaluators' time limits, 30 s for a bird
// pair (evaluation_ex.py) and 60 s per spider query (exec_eval.py), 60 s
// per strict query; results up to a million rows or 32 MiB, which with
// 8 MiB values keeps a grading of hostile predictions under 256 MB.
func DefaultOptions() Options {
	return Options{
		BirdBudget: 30 * time.Second,
		Options:    sqlenv.Options{Timeout: 60 * time.Second, MaxRows: 1_000_000, MaxBytes: 32 << 20},
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.BirdBudget <= 0 {
		o.BirdBudget = d.BirdBudget
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxRows <= 0 {
		o.MaxRows = d.MaxRows
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = d.MaxBytes
	}
	return o
}

// executor is the executor's options: the grader's, with the larger of
// the two time limits, 8 MiB values unless set, and immutable databases.
func (o Options) executor() sqlenv.Options {
	e := o.Options
	e.Timeout = max(o.BirdBudget, o.Timeout)
	if e.MaxValueLength <= 0 {
		e.MaxValueLength = 8 << 20
	}
	e.Immutable = true
	return e
}

// RecordedOptions are the options a grading's run.start records
// (grader_options). They are a record of their own, not Options, because
// the recorded shape names the fields as gradings have always recorded
// them (QueryTimeout for the executor's Timeout) and holds only the
// budgets and caps: embedding sqlenv.Options would change the bytes of
// every grading recorded from then on.
type RecordedOptions struct {
	BirdBudget   time.Duration
	QueryTimeout time.Duration
	MaxRows      int
	MaxBytes     int64
	MaxConns     int
}

// Record is o as a grading's run.start records it.
func (o Options) Record() RecordedOptions {
	return RecordedOptions{BirdBudget: o.BirdBudget, QueryTimeout: o.Timeout, MaxRows: o.MaxRows, MaxBytes: o.MaxBytes, MaxConns: o.MaxConns}
}

// Options are the grader options r records, to grade again as the
// recorded grading did (rlgate reproduce).
func (r RecordedOptions) Options() Options {
	return Options{BirdBudget: r.BirdBudget,
		Options: sqlenv.Options{Timeout: r.QueryTimeout, MaxRows: r.MaxRows, MaxBytes: r.MaxBytes, MaxConns: r.MaxConns}}
}

// Grader executes predictions and golds and compares them. It owns a
// read-only executor; gold denotations go through a GoldCache. It is safe
// for concurrent use.
type Grader struct {
	opts Options
	exec *sqlenv.Executor
	gold *GoldCache

	mu      sync.Mutex
	digests map[string]*digestEntry
	known   map[string]ledger.Digest // digests a DatabaseCheck gave (UseDatabases)
	schemas map[string]schema
	// emSchemas are the databases' schemas for exact match.
	emSchemas map[string]*emSchema
}

type digestEntry struct {
	once sync.Once
	d    ledger.Digest
	err  error
}

// NewGrader returns a grader with opts, keeping gold denotations in cache
// (a fresh one when nil).
func NewGrader(opts Options, cache *GoldCache) *Grader {
	opts = opts.withDefaults()
	if cache == nil {
		cache = NewGoldCache()
	}
	return &Grader{
		opts:      opts,
		exec:      sqlenv.NewExecutor(opts.executor()),
		gold:      cache,
		digests:   make(map[string]*digestEntry),
		known:     make(map[string]ledger.Digest),
		schemas:   make(map[string]schema),
		emSchemas: make(map[string]*emSchema),
	}
}

// Options returns the options in force, so a caller can record them.
func (g *Grader) Options() Options { return g.opts }

// Close releases the grader's database connections.
func (g *Grader) Close() error { return g.exec.Close() }

// Execute runs q as metric m runs it (Metric.Query) on the database at
// dbPath within timeout.
func (g *Grader) Execute(ctx context.Context, m Metric, dbPath, q string, timeout time.Duration) Denotation {
	d := Denotation{SQL: m.Query(q)}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := g.exec.Execute(ctx, dbPath, d.SQL)
	switch {
	case err != nil:
		d.Err = err
	case res.Truncated:
		d.Err = ErrResultTooLarge
	default:
		d.Columns, d.Rows, d.Elapsed = res.Columns, res.Rows, res.Elapsed
	}
	return d
}

// Gold returns the denotation of the gold query under m on the database
// at dbPath, from the cache when it is there. The error is not the gold's
// (that is in the denotation) but the failure to hash the database.
func (g *Grader) Gold(ctx context.Context, m Metric, dbPath, goldSQL string) (Denotation, error) {
	digest, err := g.digest(dbPath)
	if err != nil {
		return Denotation{}, err
	}
	return g.gold.Do(GoldKey{DB: digest, SQL: m.Query(goldSQL)}, func() Denotation {
		return g.Execute(ctx, m, dbPath, goldSQL, g.timeout(m))
	}), nil
}

// timeout is the time one gold query gets under m.
func (g *Grader) timeout(m Metric) time.Duration {
	if m.execution() == MetricBird {
		return g.opts.BirdBudget
	}
	return g.opts.Timeout
}

// Grade executes predSQL and (through the cache) goldSQL on the database
// at dbPath and compares them under m. Under the bird rule the prediction
// gets what is left of the budget once the gold's own time is taken, as
// if both ran in one call. A verdict that SUM, AVG or TOTAL adding floats
// left to right (SQLite before 3.43) would flip is flagged fragile. An
// empty predSQL is graded as
// ErrNoPrediction. The error reports only a database that cannot be
// hashed; everything about the queries is in the Outcome.
func (g *Grader) Grade(ctx context.Context, m Metric, dbPath, predSQL, goldSQL string) (Judgement, error) {
	if !m.Executes() {
		return g.exactMatch(ctx, dbPath, predSQL, goldSQL)
	}
	gold, err := g.Gold(ctx, m, dbPath, goldSQL)
	if err != nil {
		return Judgement{}, err
	}
	var pred Denotation
	switch budget := g.timeout(m); {
	case predSQL == "":
		pred = Denotation{Err: ErrNoPrediction}
	case gold.Err == nil && m.Query(predSQL) == gold.SQL && (m.execution() != MetricBird || 2*gold.Elapsed < budget):
		// The same statement on the same frozen database has the same
		// result: reuse the gold's. Under the bird rule only when running
		// it twice would have fit the shared budget.
		pred = gold
	case m.execution() == MetricBird && gold.Err == nil:
		pred = g.Execute(ctx, m, dbPath, predSQL, budget-gold.Elapsed)
	default:
		pred = g.Execute(ctx, m, dbPath, predSQL, budget)
	}
	o := Compare(m, pred, gold)
	if !o.Fragile && predSQL != goldSQL {
		if why := g.summationFragile(ctx, m, dbPath, o, predSQL, goldSQL); why != "" {
			o.Fragile, o.FragileReason = true, why
		}
	}
	return o, nil
}

// digest returns the BLAKE3 digest of the database file, hashed once per
// path for the grader's life: databases are inputs and must not change
// while graded.
func (g *Grader) digest(dbPath string) (ledger.Digest, error) {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return ledger.Digest{}, fmt.Errorf("hash database %s: %w", dbPath, err)
	}
	g.mu.Lock()
	e := g.digests[abs]
	if e == nil {
		e = &digestEntry{}
		g.digests[abs] = e
	}
	g.mu.Unlock()
	e.once.Do(func() {
		f, err := os.Open(abs)
		if err != nil {
			e.err = fmt.Errorf("hash database: %w", err)
			return
		}
		defer f.Close()
		if e.d, _, err = ledger.SumReader(f); err != nil {
			e.err = fmt.Errorf("hash database %s: %w", dbPath, err)
		}
	})
	return e.d, e.err
}
