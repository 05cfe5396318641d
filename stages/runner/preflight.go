package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
)

// The body types of the kinds a stage run writes besides the ledger's own.
func init() {
	records.Register[Preflight](records.KindPreflight, 1)
	records.Register[LogChunk](records.KindLog, 1)
	records.Register[GPUSamples](records.KindGPUSamples, 1)
}

// Preflight is the body of a preflight entry: the reward check of the
// first input that is an imported dataset directory, before the stage
// runs. Every database the gold needs is present under the root the stage
// grades on and has the digest the import recorded, and gold graded
// against itself scores 1 on at least MinShare of a seeded sample. The
// reward audit cites a passed pre-flight instead of grading again.
type Preflight struct {
	Input       string `json:"input"`   // the input's name
	Dataset     string `json:"dataset"` // its path
	ImportSeq   int64  `json:"import_seq,omitempty"`
	DBRootParam string `json:"db_root_param,omitempty"` // the parameter that set the root, if one did
	grade.GoldDatabases
	SelfGrade *grade.SelfGradeResult `json:"self_grade,omitempty"` // absent when the databases already failed
	MinShare  float64                `json:"min_share"`
	Passed    bool                   `json:"passed"`
	Reason    string                 `json:"reason,omitempty"` // why it failed
}

// preflight checks the gold of the first input of arts that is an
// imported dataset directory, as the stage would grade it; nil when no
// input is one. An error means the check could not be made.
func preflight(ctx context.Context, l *ledger.Ledger, spec Spec, dir string, arts []ArtifactBody) (*Preflight, error) {
	var in *ArtifactBody
	var man *dataset.Manifest
	for i := range arts {
		if arts[i].Role != records.RoleInput || arts[i].Kind == records.ArtifactCheckpoint {
			continue
		}
		if m, err := dataset.ReadManifest(arts[i].Path); err == nil {
			in, man = &arts[i], m
			break
		}
	}
	if in == nil {
		return nil, nil
	}
	p := &Preflight{Input: in.Name, Dataset: in.Path, MinShare: grade.DefaultSelfGradeMin}
	root, param := dataset.StageDBRoot(man, spec.Params, dir)
	p.DBRoot, p.DBRootParam = root, param
	where := root
	if param != "" {
		where += " (parameter " + param + ")"
	}
	imp, recorded, err := dataset.RecordedImport(ctx, l, man)
	if err != nil {
		return nil, err
	}
	if imp == 0 {
		p.Gold = man.Gold.Digest
		p.Reason = fmt.Sprintf("input %s: dataset %s holds gold %s, which no rlgate data import in this ledger recorded. Try: import it into this ledger (rlgate data import), or --skip-preflight",
			in.Name, in.Path, man.Gold.Digest)
		return p, nil
	}
	p.ImportSeq = imp
	dbs, golds, err := grade.CheckGoldDatabases(ctx, filepath.Join(in.Path, dataset.GoldFile), man.Gold.Digest, root, recorded.Databases)
	if err != nil {
		p.Gold = man.Gold.Digest
		p.Reason = fmt.Sprintf("input %s: %v", in.Name, err)
		return p, nil
	}
	p.GoldDatabases = *dbs
	switch {
	case len(dbs.Missing) > 0:
		p.Reason = fmt.Sprintf("input %s: %d of %d databases the gold needs are missing under %s: %s. Try: give the right database root, or --skip-preflight",
			in.Name, len(dbs.Missing), dbs.Needed, where, strings.Join(dbs.Missing, ", "))
		return p, nil
	case len(dbs.Changed) > 0:
		parts := make([]string, len(dbs.Changed))
		for i, m := range dbs.Changed {
			parts[i] = fmt.Sprintf("%s (%s: %s, recorded %s)", m.DBID, m.Path, m.Actual, m.Recorded)
		}
		p.Reason = fmt.Sprintf("input %s: %d databases under %s differ from the digests the import (entry %d) recorded: %s. Try: restore the imported databases, or --skip-preflight",
			in.Name, len(dbs.Changed), where, imp, strings.Join(parts, "; "))
		return p, nil
	}
	g := grade.NewGrader(grade.Options{}, nil)
	defer g.Close()
	sg, err := grade.SelfGrade(ctx, g, grade.MetricBird, root, golds, grade.DefaultSelfGradeSample, grade.DefaultSelfGradeSeed)
	if err != nil {
		return nil, err
	}
	p.SelfGrade = &sg
	if !sg.OK(p.MinShare) {
		p.Reason = fmt.Sprintf("input %s: gold graded against itself scored 1 on %d of %d sampled tasks (%.1f%%, need %.0f%%) on %s: the reward would be wrong. First failing: %s",
			in.Name, sg.Passed, sg.Sample, 100*sg.Share(), 100*p.MinShare, where, strings.Join(sg.Failed[:min(5, len(sg.Failed))], ", "))
		return p, nil
	}
	p.Passed = true
	return p, nil
}

// FailedCheck names the reward audit's check a failed pre-flight stands
// in for: databases-present when a database the gold needs is missing or
// changed (or the gold cannot be read), gold-self-grade when the gold did
// not score 1 against itself often enough; "" when it passed.
func (p *Preflight) FailedCheck() string {
	switch {
	case p.Passed:
		return ""
	case p.SelfGrade != nil:
		return "gold-self-grade"
	}
	return "databases-present"
}
