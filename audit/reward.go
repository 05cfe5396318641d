package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
)

// The checks of the reward audit.
const (
	CheckDatabasesPresent = "databases-present" // every database the gold runs on exists under the root used
	CheckGoldSelfGrade    = "gold-self-grade"   // gold graded against itself scores 1 on at least SelfGradeMin of a sample
	CheckRewardAlive      = "execution-reward"  // the trained run's reward is not constantly 0
	CheckKLGrowth         = "kl-growth"         // KL at the end over KL at the start stays under MaxKLGrowth
	CheckZeroVariance     = "zero-variance"     // reported: the share of prompt groups with no reward variance
	CheckSQLTimeouts      = "sql-timeouts"      // reported: SQL executions that timed out in the evaluations
)

// goldSource is a gold file with the database root it is graded on, as a
// training run or an evaluation recorded them.
type goldSource struct {
	what       string // for messages
	dir        string // the imported dataset directory
	goldDigest ledger.Digest
	dbRoot     string
	metric     grading.Metric
	seqs       []int64
	run        string // the training run whose pre-flight may stand for the self-grade; empty for an evaluation
	// recorded are the digests of the databases (by db_id) the ledger
	// recorded for this gold: the import's for training data, the
	// grading's database_check for an evaluation; by whom, for messages.
	recorded   map[string]ledger.Digest
	recordedBy string
}

// Reward checks the reward signal. Before training: for the dataset each
// labelled training run read (an imported dataset directory given with
// --in, graded on its db_root parameter when it has one) and each
// evaluation's dataset, every database the gold needs is present and gold
// graded against itself scores 1 on at least SelfGradeMin of a sample; the
// gold file is verified against the digest the ledger recorded before it
// is used. After training, from the rl run's ingested metrics: the
// execution reward is not constantly 0, and KL growth stays under
// MaxKLGrowth; the zero-variance group share and the evaluations' SQL
// timeouts are reported.
func Reward(ctx context.Context, l *ledger.Ledger, s Subjects, o Options) (*Report, error) {
	return runReward(ctx, l, s, o, nil)
}

func runReward(ctx context.Context, l *ledger.Ledger, s Subjects, o Options, cache *scanCache) (*Report, error) {
	o = o.withDefaults()
	r := newReport(AuditReward, s)
	evals, trains, err := loadSubjects(ctx, l, s)
	if err != nil {
		return nil, err
	}
	var sources []goldSource
	for _, t := range trains {
		a, man, err := t.datasetInput(ctx, l)
		if err != nil {
			r.fail(CheckGoldSelfGrade, nil, []int64{t.run.StartedSeq, a.Seq}, "%s (training %s): %v", t.Label, t.Run, err)
			continue
		}
		if man == nil {
			continue
		}
		src := goldSource{what: fmt.Sprintf("%s (training %s, input %s)", t.Label, t.Run, a.Name), dir: a.Path, goldDigest: man.Gold.Digest,
			dbRoot: man.DBRoot, metric: grading.MetricBird, seqs: []int64{t.run.StartedSeq, a.Seq}}
		src.run = t.Run
		if root, k := dataset.StageDBRoot(man, t.start.Params, t.start.Dir); k != "" {
			src.dbRoot = root
			src.what += ", parameter " + k
		}
		// The gold digest must be the one the ledger recorded at import.
		imp, recorded, err := dataset.RecordedImport(ctx, l, man)
		if err != nil {
			return nil, err
		}
		if imp == 0 {
			r.fail(CheckGoldSelfGrade, nil, src.seqs, "%s: dataset %s holds gold %s, which no rlgate data import in this ledger recorded", src.what, a.Path, man.Gold.Digest)
			continue
		}
		src.seqs = append(src.seqs, imp)
		src.recorded, src.recordedBy = recorded.Databases, fmt.Sprintf("the import (entry %d)", imp)
		sources = append(sources, src)
	}
	for _, e := range evals {
		src := goldSource{what: fmt.Sprintf("%s (rollout %s)", e.Label, e.grade.Rollout), dir: e.datasetDir(), goldDigest: e.grade.GoldDigest,
			dbRoot: e.rollout.DBRoot, metric: e.grade.Metric, seqs: []int64{e.rolloutRun.StartedSeq, e.gradeRun.StartedSeq}}
		if c := e.grade.Databases; c != nil {
			src.recorded, src.recordedBy = c.Digests, fmt.Sprintf("grading %s (entry %d)", e.Run, e.gradeRun.StartedSeq)
		}
		sources = append(sources, src)
	}
	seen := map[string]bool{}
	g := grading.NewGrader(grading.Options{}, nil)
	defer g.Close()
	for _, src := range sources {
		key := src.goldDigest.String() + "\x00" + src.dbRoot
		if seen[key] {
			continue
		}
		seen[key] = true
		if err := selfGrade(ctx, l, r, g, src, o, cache); err != nil {
			return nil, err
		}
	}

	if t := trainByLabel(trains, LabelRL); t != nil {
		if err := trainingSignal(ctx, l, r, t, o); err != nil {
			return nil, err
		}
	}
	if len(evals) > 0 {
		if err := sqlTimeouts(ctx, l, r, evals, cache); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// selfGrade adds the databases-present and gold-self-grade findings of one
// gold source. A training run's passed or failed pre-flight that checked
// the same gold on databases with the digests hashed now stands for the
// self-grade, cited, and the queries are not run again.
func selfGrade(ctx context.Context, l *ledger.Ledger, r *Report, g *grading.Grader, src goldSource, o Options, cache *scanCache) error {
	golds, err := cache.readGold(ctx, l, filepath.Join(src.dir, dataset.GoldFile), src.goldDigest)
	if err != nil {
		r.fail(CheckGoldSelfGrade, nil, src.seqs, "%s: cannot read the gold: %v", src.what, err)
		return nil
	}
	// The databases are used where they lie now (--data-root); findings
	// name the root the ledger recorded, and the pre-flight is matched on
	// it, so a verdict re-derives the same wherever the files went.
	var rels []string
	for _, gd := range golds {
		rels = append(rels, dataset.DBRel(gd.DBID))
	}
	at := dataset.FindDir(ctx, src.dbRoot, slices.Compact(slices.Sorted(slices.Values(rels))))
	c, err := grading.GoldOnDatabases(ctx, golds, src.goldDigest, at, src.recorded)
	if err != nil {
		r.fail(CheckGoldSelfGrade, nil, src.seqs, "%s: %v", src.what, err)
		return nil
	}
	c.DBRoot = src.dbRoot
	if len(c.Missing) > 0 {
		missing := make([]string, len(c.Missing))
		for i, db := range c.Missing {
			missing[i] = db
			if d, ok := src.recorded[db]; ok {
				missing[i] += " (" + d.String() + ")"
			}
		}
		r.fail(CheckDatabasesPresent, c.Missing, src.seqs, "%s: %d of %d databases are missing under %s: %s%s", src.what, len(c.Missing), c.Needed,
			src.dbRoot, strings.Join(missing, ", "), dataset.MissingHint(ctx))
	} else {
		r.pass(CheckDatabasesPresent, nil, src.seqs, "%s: all %d databases present under %s", src.what, c.Needed, src.dbRoot)
	}
	if len(c.Changed) > 0 {
		parts := make([]string, len(c.Changed))
		for i, m := range c.Changed {
			parts[i] = fmt.Sprintf("%s (%s: %s, recorded %s)", m.DBID, m.Path, m.Actual, m.Recorded)
		}
		r.fail(CheckGoldSelfGrade, c.Changed, src.seqs, "%s: %d databases under %s differ from the digests %s recorded, so the gold was not graded on them: %s",
			src.what, len(c.Changed), src.dbRoot, src.recordedBy, strings.Join(parts, "; "))
		return nil
	}

	sg, seqs, err := recordedSelfGrade(ctx, l, src, c, min(o.SelfGradeSample, len(golds)))
	if err != nil {
		return err
	}
	by := ""
	if sg != nil {
		by = fmt.Sprintf(" (the pre-flight of %s, entry %d)", src.run, seqs[len(seqs)-1])
	} else {
		res, err := grading.SelfGrade(ctx, g, src.metric, at, golds, o.SelfGradeSample, grading.DefaultSelfGradeSeed)
		if err != nil {
			return err
		}
		sg = &res
	}
	if !sg.OK(o.SelfGradeMin) {
		r.fail(CheckGoldSelfGrade, sg.Failed, seqs, "%s: gold graded against itself scored 1 on %d of %d sampled tasks%s (%.1f%%, need %.0f%%) on %s: the reward would be wrong. First failing: %s",
			src.what, sg.Passed, sg.Sample, by, 100*sg.Share(), 100*o.SelfGradeMin, src.dbRoot, strings.Join(sg.Failed[:min(5, len(sg.Failed))], ", "))
		return nil
	}
	r.pass(CheckGoldSelfGrade, nil, seqs, "%s: gold graded against itself scored 1 on %d of %d sampled tasks%s", src.what, sg.Passed, sg.Sample, by)
	return nil
}

// recordedSelfGrade returns the self-grade of the last pre-flight src's
// training run recorded, with src's entries and the pre-flight's, when it
// graded a sample of n of the same gold on the same root with the same
// seed, and the digests it checked the databases against are those c
// hashed now; nil and src's entries otherwise (an evaluation, an older
// ledger, --skip-preflight, databases changed since).
func recordedSelfGrade(ctx context.Context, l *ledger.Ledger, src goldSource, c *grading.GoldDatabases, n int) (*grading.SelfGradeResult, []int64, error) {
	if src.run == "" {
		return nil, src.seqs, nil
	}
	var last *runner.Preflight
	var seq int64
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindPreflight, Run: src.run}) {
		if err != nil {
			return nil, nil, err
		}
		var p runner.Preflight
		if err := json.Unmarshal(e.Body, &p); err != nil {
			return nil, nil, fmt.Errorf("%s: entry %d: %w", src.what, e.Seq, err)
		}
		last, seq = &p, e.Seq
	}
	if last == nil || last.SelfGrade == nil || last.Gold != c.Gold || last.DBRoot != c.DBRoot || !maps.Equal(last.Databases, c.Databases) ||
		last.SelfGrade.Sample != n || last.SelfGrade.Seed != grading.DefaultSelfGradeSeed {
		return nil, src.seqs, nil
	}
	return last.SelfGrade, append(slices.Clone(src.seqs), seq), nil
}

// trainingSignal adds the findings read from the trained run's metrics.
func trainingSignal(ctx context.Context, l *ledger.Ledger, r *Report, t *trainRun, o Options) error {
	reward, err := CanonSeries(ctx, l, t.Run, metrics.RewardMean)
	if err != nil {
		return err
	}
	switch {
	case reward == nil:
		r.fail(CheckRewardAlive, nil, []int64{t.run.StartedSeq}, "%s: stage run %s logged no reward metric. Try: rlgate run --metrics FILE:FORMAT", t.Label, t.Run)
	case maxAbs(reward.Points) == 0:
		r.fail(CheckRewardAlive, nil, reward.Seqs, "%s: %s is 0 at all %d logged steps: the execution reward never fired (a wrong database path zeroes it)",
			t.Label, reward.Key, len(reward.Points))
	default:
		r.pass(CheckRewardAlive, nil, []int64{reward.Seqs[0]}, "%s: %s ranges up to %g over %d steps", t.Label, reward.Key, maxValue(reward.Points), len(reward.Points))
	}

	kl, err := CanonSeries(ctx, l, t.Run, metrics.KL)
	if err != nil {
		return err
	}
	if kl == nil {
		r.pass(CheckKLGrowth, nil, nil, "%s: no KL metric logged (nothing to bound)", t.Label)
	} else {
		tenth := max(1, len(kl.Points)/10)
		first := max(meanValue(kl.Points[:tenth]), o.KLFloor)
		last := meanValue(kl.Points[len(kl.Points)-tenth:])
		ratio := last / first
		seqs := []int64{kl.Seqs[0], kl.Seqs[len(kl.Seqs)-1]}
		if ratio > o.MaxKLGrowth || math.IsNaN(ratio) {
			r.fail(CheckKLGrowth, nil, seqs, "%s: %s grew %.3g× (last tenth %.3g over first tenth %.3g, floored at %g), over the bound %g",
				t.Label, kl.Key, ratio, last, first, o.KLFloor, o.MaxKLGrowth)
		} else {
			r.pass(CheckKLGrowth, nil, seqs, "%s: %s grew %.3g× (bound %g)", t.Label, kl.Key, ratio, o.MaxKLGrowth)
		}
	}

	if f, err := CanonSeries(ctx, l, t.Run, metrics.ZeroVarianceFraction); err != nil {
		return err
	} else if f != nil {
		r.pass(CheckZeroVariance, nil, []int64{f.Seqs[0]}, "%s: mean %s %.3f over %d steps", t.Label, f.Key, meanValue(f.Points), len(f.Points))
		return nil
	}
	zero, err := CanonSeries(ctx, l, t.Run, metrics.ZeroVarianceGroups)
	if err != nil {
		return err
	}
	groups, err := CanonSeries(ctx, l, t.Run, metrics.Groups)
	if err != nil {
		return err
	}
	gen, err := CanonSeries(ctx, l, t.Run, metrics.GenBatches)
	if err != nil {
		return err
	}
	switch {
	case zero != nil && groups != nil:
		r.pass(CheckZeroVariance, nil, []int64{zero.Seqs[0], groups.Seqs[0]}, "%s: %.3f of prompt groups had zero reward variance (%s over %s)",
			t.Label, sumValue(zero.Points)/sumValue(groups.Points), zero.Key, groups.Key)
	case zero != nil:
		r.pass(CheckZeroVariance, nil, []int64{zero.Seqs[0]}, "%s: %g zero-variance groups in all (%s)", t.Label, sumValue(zero.Points), zero.Key)
	case gen != nil:
		r.pass(CheckZeroVariance, nil, []int64{gen.Seqs[0]}, "%s: mean %s %.3f (1: no batch was refilled after dropping zero-variance groups)", t.Label, gen.Key, meanValue(gen.Points))
	default:
		r.pass(CheckZeroVariance, nil, nil, "%s: no zero-variance group metric logged", t.Label)
	}
	return nil
}

// sqlTimeouts reports the SQL executions of the evaluations that timed out.
func sqlTimeouts(ctx context.Context, l *ledger.Ledger, r *Report, evals []*evalRun, cache *scanCache) error {
	parts := make([]string, 0, len(evals))
	var seqs []int64
	for _, e := range evals {
		sc, err := cache.scan(ctx, l, e.grade.Rollout)
		if err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%s %d of %d", e.Label, sc.Timeouts, sc.SQLRuns))
		seqs = append(seqs, sc.TimeoutSeqs...)
	}
	r.pass(CheckSQLTimeouts, nil, seqs, "SQL executions that timed out: %s", strings.Join(parts, ", "))
	return nil
}

func maxAbs(pts []ledger.MetricPoint) float64 {
	m := 0.0
	for _, p := range pts {
		if !math.IsNaN(p.Value) {
			m = max(m, math.Abs(p.Value))
		}
	}
	return m
}

func sumValue(pts []ledger.MetricPoint) float64 {
	s := 0.0
	for _, p := range pts {
		if !math.IsNaN(p.Value) {
			s += p.Value
		}
	}
	return s
}

func meanValue(pts []ledger.MetricPoint) float64 {
	n := 0
	for _, p := range pts {
		if !math.IsNaN(p.Value) {
			n++
		}
	}
	return sumValue(pts) / float64(n)
}
