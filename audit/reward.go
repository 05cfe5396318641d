package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/metrics"
	"golang.org/x/sync/errgroup"
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
		a, man := t.datasetInput()
		if a == nil {
			continue
		}
		src := goldSource{what: fmt.Sprintf("%s (training %s, input %s)", t.Label, t.Run, a.Name), dir: a.Path, goldDigest: man.Gold.Digest,
			dbRoot: man.DBRoot, metric: grading.MetricBird, seqs: []int64{t.run.StartedSeq, a.Seq}}
		if k, v, ok := dbRootParam(t.start.Params); ok {
			src.dbRoot = v
			src.what += ", parameter " + k
			if !filepath.IsAbs(v) {
				src.dbRoot = filepath.Join(t.start.Dir, v)
			}
		}
		// The gold digest must be the one the ledger recorded at import.
		imp, recorded, err := importSeq(ctx, l, man)
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
		if err := selfGrade(ctx, r, g, src, o); err != nil {
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

// dbRootParam returns a run's database-root parameter: db_root, or a
// dotted name ending in it.
func dbRootParam(params map[string]string) (string, string, bool) {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if k == "db_root" || strings.HasSuffix(k, ".db_root") {
			return k, params[k], true
		}
	}
	return "", "", false
}

// importSeq returns the dataset entry of the rlgate data import that wrote
// man's tasks and gold, or 0, with the manifest the ledger holds for it
// (whose database digests are the ones recorded at import, not those of
// a manifest.json edited since).
func importSeq(ctx context.Context, l *ledger.Ledger, man *dataset.Manifest) (int64, *dataset.Manifest, error) {
	rows, err := l.ArtifactsByDigest(ctx, man.Tasks.Digest)
	if err != nil {
		return 0, nil, err
	}
	for _, row := range rows {
		if row.Role != "dataset" || row.Manifest == nil {
			continue
		}
		raw, err := l.ReadBlob(*row.Manifest)
		if err != nil {
			return 0, nil, err
		}
		var m dataset.Manifest
		if err := json.Unmarshal(raw, &m); err == nil && m.Gold.Digest == man.Gold.Digest {
			return row.Seq, &m, nil
		}
	}
	return 0, nil, nil
}

// selfGrade adds the databases-present and gold-self-grade findings of one
// gold source.
func selfGrade(ctx context.Context, r *Report, g *grading.Grader, src goldSource, o Options) error {
	path := filepath.Join(src.dir, dataset.GoldFile)
	d, _, err := manifests.HashFile(ctx, path)
	if err != nil {
		r.fail(CheckGoldSelfGrade, nil, src.seqs, "%s: cannot read the gold: %v", src.what, err)
		return nil
	}
	if d != src.goldDigest {
		r.fail(CheckGoldSelfGrade, nil, src.seqs, "%s: %s has digest %s, not the gold %s the ledger recorded; it was changed after import", src.what, path, d, src.goldDigest)
		return nil
	}
	golds, err := gold.Read(path)
	if err != nil {
		return err
	}
	var missing []string
	for _, db := range distinctDBs(golds) {
		if fi, err := os.Stat(dataset.DBPath(src.dbRoot, db)); err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, db)
		}
	}
	if len(missing) > 0 {
		r.fail(CheckDatabasesPresent, missing, src.seqs, "%s: %d of %d databases are missing under %s: %s", src.what, len(missing), len(distinctDBs(golds)),
			src.dbRoot, strings.Join(missing, ", "))
	} else {
		r.pass(CheckDatabasesPresent, nil, src.seqs, "%s: all %d databases present under %s", src.what, len(distinctDBs(golds)), src.dbRoot)
	}
	if changed, err := changedDatabases(ctx, src, golds, missing); err != nil {
		return err
	} else if len(changed) > 0 {
		parts := make([]string, len(changed))
		for i, m := range changed {
			parts[i] = fmt.Sprintf("%s (%s: %s, recorded %s)", m.DBID, m.Path, m.Actual, m.Recorded)
		}
		r.fail(CheckGoldSelfGrade, changed, src.seqs, "%s: %d databases under %s differ from the digests %s recorded, so the gold was not graded on them: %s",
			src.what, len(changed), src.dbRoot, src.recordedBy, strings.Join(parts, "; "))
		return nil
	}

	sample := sampleGold(golds, o.SelfGradeSample)
	scored := make([]bool, len(sample))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i, gd := range sample {
		eg.Go(func() error {
			out, err := g.Grade(ectx, src.metric, dataset.DBPath(src.dbRoot, gd.DBID), gd.SQL, gd.SQL)
			scored[i] = err == nil && out.Correct
			return ectx.Err()
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	ok := 0
	var failed []string
	for i, gd := range sample {
		if scored[i] {
			ok++
		} else {
			failed = append(failed, gd.ID)
		}
	}
	share := float64(ok) / float64(max(len(sample), 1))
	if len(sample) == 0 || share < o.SelfGradeMin {
		r.fail(CheckGoldSelfGrade, failed, src.seqs, "%s: gold graded against itself scored 1 on %d of %d sampled tasks (%.1f%%, need %.0f%%) on %s: the reward would be wrong. First failing: %s",
			src.what, ok, len(sample), 100*share, 100*o.SelfGradeMin, src.dbRoot, strings.Join(failed[:min(5, len(failed))], ", "))
		return nil
	}
	r.pass(CheckGoldSelfGrade, nil, src.seqs, "%s: gold graded against itself scored 1 on %d of %d sampled tasks", src.what, ok, len(sample))
	return nil
}

// changedDatabases hashes every database the golds run on that is present
// under src's root and has a recorded digest, and returns those whose
// digest differs from the recorded one: a wrong database root or a
// database changed since the import or the grading.
func changedDatabases(ctx context.Context, src goldSource, golds []gold.Gold, missing []string) ([]grading.DatabaseMismatch, error) {
	want := &dataset.Manifest{DBRoot: src.dbRoot, Databases: map[string]ledger.Digest{}}
	for _, db := range distinctDBs(golds) {
		if d, ok := src.recorded[db]; ok && !slices.Contains(missing, db) {
			want.Databases[db] = d
		}
	}
	if len(want.Databases) == 0 {
		return nil, nil
	}
	c, err := grading.CheckDatabases(ctx, want, src.dbRoot, true, nil)
	if err != nil {
		return nil, err
	}
	return c.Mismatches, nil
}

func distinctDBs(golds []gold.Gold) []string {
	var dbs []string
	for _, g := range golds {
		dbs = append(dbs, g.DBID)
	}
	slices.Sort(dbs)
	return slices.Compact(dbs)
}

// sampleGold picks up to n golds, the same ones every time: those whose
// ids hash lowest.
func sampleGold(golds []gold.Gold, n int) []gold.Gold {
	if len(golds) <= n {
		return golds
	}
	s := slices.Clone(golds)
	slices.SortFunc(s, func(a, b gold.Gold) int {
		return cmp.Compare(ledger.Sum([]byte(a.ID)).String(), ledger.Sum([]byte(b.ID)).String())
	})
	return s[:n]
}

// trainingSignal adds the findings read from the trained run's metrics.
func trainingSignal(ctx context.Context, l *ledger.Ledger, r *Report, t *trainRun, o Options) error {
	reward, err := canonSeries(ctx, l, t.Run, metrics.RewardMean)
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

	kl, err := canonSeries(ctx, l, t.Run, metrics.KL)
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

	if f, err := canonSeries(ctx, l, t.Run, metrics.ZeroVarianceFraction); err != nil {
		return err
	} else if f != nil {
		r.pass(CheckZeroVariance, nil, []int64{f.Seqs[0]}, "%s: mean %s %.3f over %d steps", t.Label, f.Key, meanValue(f.Points), len(f.Points))
		return nil
	}
	zero, err := canonSeries(ctx, l, t.Run, metrics.ZeroVarianceGroups)
	if err != nil {
		return err
	}
	groups, err := canonSeries(ctx, l, t.Run, metrics.Groups)
	if err != nil {
		return err
	}
	gen, err := canonSeries(ctx, l, t.Run, metrics.GenBatches)
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
