package grade

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"golang.org/x/sync/errgroup"
)

// The defaults of the gold self-grade: how many gold queries are graded
// against themselves, the share that must score 1, and the seed that picks
// the sample. rlgate run's pre-flight and the reward audit use the same.
const (
	DefaultSelfGradeSample = 200
	DefaultSelfGradeMin    = 0.99
	DefaultSelfGradeSeed   = 0
)

// GoldDatabases is what checking the databases a gold file runs on found,
// before any query runs on them.
type GoldDatabases struct {
	Gold   ledger.Digest `json:"gold"` // the gold file's digest, as verified
	DBRoot string        `json:"db_root"`
	Needed int           `json:"needed"` // distinct databases the gold runs on
	// Databases are the digests, hashed now, of the needed databases that
	// are present and have a recorded digest.
	Databases map[string]ledger.Digest `json:"databases"`
	Missing   []string                 `json:"missing,omitempty"` // needed, not a file under DBRoot
	Changed   []DatabaseMismatch       `json:"changed,omitempty"` // present, but not the recorded bytes
}

// CheckGoldDatabases reads the gold file at path, verifies that its digest
// is want (the one the ledger recorded), and checks every database its
// queries run on under root: present, and, for those with a recorded
// digest (db_id -> digest), unchanged. An error means the gold itself
// cannot be trusted or read; missing and changed databases are reported
// in the result.
func CheckGoldDatabases(ctx context.Context, path string, want ledger.Digest, root string, recorded map[string]ledger.Digest) (*GoldDatabases, []gold.Gold, error) {
	d, _, err := manifests.HashFile(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the gold: %w", err)
	}
	if d != want {
		return nil, nil, fmt.Errorf("%s has digest %s, not the gold %s the ledger recorded; it was changed after import", path, d, want)
	}
	golds, err := gold.Read(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := GoldOnDatabases(ctx, golds, d, root, recorded)
	return c, golds, err
}

// GoldOnDatabases checks every database golds (a gold file of digest d,
// already verified) run on under root, as CheckGoldDatabases does.
func GoldOnDatabases(ctx context.Context, golds []gold.Gold, d ledger.Digest, root string, recorded map[string]ledger.Digest) (*GoldDatabases, error) {
	var dbs []string
	for _, g := range golds {
		dbs = append(dbs, g.DBID)
	}
	slices.Sort(dbs)
	dbs = slices.Compact(dbs)
	c := &GoldDatabases{Gold: d, DBRoot: root, Needed: len(dbs), Databases: map[string]ledger.Digest{}}
	check := &dataset.Manifest{DBRoot: root, Databases: map[string]ledger.Digest{}}
	for _, db := range dbs {
		if fi, err := os.Stat(dataset.DBPath(root, db)); err != nil || !fi.Mode().IsRegular() {
			c.Missing = append(c.Missing, db)
		} else if rd, ok := recorded[db]; ok {
			check.Databases[db] = rd
		}
	}
	if len(check.Databases) > 0 {
		dc, err := CheckDatabases(ctx, check, root, true, nil)
		if err != nil {
			return nil, err
		}
		c.Databases, c.Changed = dc.Digests, dc.Mismatches
	}
	return c, nil
}

// SelfGradeResult is what grading a sample of gold against itself found.
type SelfGradeResult struct {
	Sample int      `json:"sample"` // golds graded
	Seed   uint64   `json:"seed"`
	Passed int      `json:"passed"` // golds that scored 1
	Failed []string `json:"failed"` // the ids of those that did not, in sample order
}

// OK reports whether at least min of a non-empty sample scored 1.
func (r SelfGradeResult) OK(min float64) bool {
	return r.Sample > 0 && r.Share() >= min
}

// Share is the share of the sample that scored 1.
func (r SelfGradeResult) Share() float64 {
	return float64(r.Passed) / float64(max(r.Sample, 1))
}

// SelfGrade grades a seeded sample of n golds (SampleGold) against
// themselves with metric m on the databases under dbRoot, on all cores. A
// gold that does not score 1 against itself means the reward computed on
// these databases would be wrong: a wrong database root, a changed
// database, or a gold the grader cannot execute.
func SelfGrade(ctx context.Context, g *Grader, m Metric, dbRoot string, golds []gold.Gold, n int, seed uint64) (SelfGradeResult, error) {
	sample := SampleGold(golds, n, seed)
	scored := make([]bool, len(sample))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i, gd := range sample {
		eg.Go(func() error {
			out, err := g.Grade(ectx, m, dataset.DBPath(dbRoot, gd.DBID), gd.SQL, gd.SQL)
			scored[i] = err == nil && out.Correct
			return ectx.Err()
		})
	}
	if err := eg.Wait(); err != nil {
		return SelfGradeResult{}, err
	}
	r := SelfGradeResult{Sample: len(sample), Seed: seed, Failed: []string{}}
	for i, gd := range sample {
		if scored[i] {
			r.Passed++
		} else {
			r.Failed = append(r.Failed, gd.ID)
		}
	}
	return r, nil
}

// SampleGold picks up to n golds, the same ones for the same seed: those
// whose "seed:id" hashes lowest.
func SampleGold(golds []gold.Gold, n int, seed uint64) []gold.Gold {
	if len(golds) <= n {
		return golds
	}
	// Each key is hashed once, not at every comparison of the sort; its
	// bytes order as its hex did.
	type keyed struct {
		key ledger.Digest
		g   gold.Gold
	}
	ks := make([]keyed, len(golds))
	for i, g := range golds {
		ks[i] = keyed{ledger.Sum(fmt.Appendf(nil, "%d:%s", seed, g.ID)), g}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.key[:], b.key[:]) })
	s := make([]gold.Gold, n)
	for i := range s {
		s[i] = ks[i].g
	}
	return s
}
