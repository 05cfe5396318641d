package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	grading "github.com/rlgate/rlgate/stages/grade"
)

// The ledger audits, as Report.Audit names them.
const (
	AuditBudget   = "budget"
	AuditTraining = "training"
	AuditIdentity = "identity"
	AuditReward   = "reward"
	AuditGold     = "gold"
	AuditSplit    = "split"
)

// Audits lists the ledger audits in the order the gate runs them.
var Audits = []string{AuditGold, AuditSplit, AuditBudget, AuditReward, AuditTraining, AuditIdentity}

// Subjects name what an audit or the gate looks at, by run id under a
// label (base, sft, rl, noupdate): Runs are grading runs (rlgate eval or
// grade), from which the ledger leads to the rollout, its protocol, tasks
// and model identity; Train are stage runs (rlgate run) that trained, with
// their parameters, metrics and checkpoints.
type Subjects struct {
	Runs  []LabeledRun `json:"runs,omitempty"`
	Train []LabeledRun `json:"train,omitempty"`
}

// The labels the audits and the built-in gate policy give meaning to.
const (
	LabelBase     = "base"
	LabelSFT      = "sft"
	LabelRL       = "rl"
	LabelNoUpdate = "noupdate"
)

// labeled returns the run id of label in runs, or "".
func labeled(runs []LabeledRun, label string) string {
	for _, r := range runs {
		if r.Label == label {
			return r.Run
		}
	}
	return ""
}

// Report is the result of one ledger audit, recorded as an audit.NAME
// entry. Its JSON form is a stable contract: fields are only ever added.
type Report struct {
	Audit    string    `json:"audit"`
	OK       bool      `json:"ok"`
	Failed   int       `json:"failed"` // findings that did not pass
	Subjects Subjects  `json:"subjects"`
	Findings []Finding `json:"findings"`
	Seq      int64     `json:"seq,omitempty"` // the audit.NAME entry, once recorded
}

func newReport(name string, s Subjects) *Report {
	return &Report{Audit: name, OK: true, Subjects: s, Findings: []Finding{}}
}

// add appends f, keeping OK and Failed in step with the findings; seqs are
// sorted and made distinct.
func (r *Report) add(f Finding) {
	slices.Sort(f.Seqs)
	f.Seqs = slices.Compact(f.Seqs)
	r.Findings = append(r.Findings, f)
	if !f.OK {
		r.Failed++
	}
	r.OK = r.Failed == 0
}

// pass and fail add a finding with a formatted message.
func (r *Report) pass(check string, ev any, seqs []int64, format string, args ...any) {
	r.add(Finding{Check: check, OK: true, Message: fmt.Sprintf(format, args...), Evidence: ev, Seqs: seqs})
}

func (r *Report) fail(check string, ev any, seqs []int64, format string, args ...any) {
	r.add(Finding{Check: check, Message: fmt.Sprintf(format, args...), Evidence: ev, Seqs: seqs})
}

// Record appends the report as an audit.NAME entry and sets Seq.
func (r *Report) Record(ctx context.Context, l *ledger.Ledger) error {
	return record(ctx, l, []*Report{r}, nil)
}

// record appends the reports that are there (nil ones are skipped), then
// the comparisons, as one write, and sets the Seq of each: the gate
// records what it decided on with one commit, not one an entry.
func record(ctx context.Context, l *ledger.Ledger, reps []*Report, cmps []*Comparison) error {
	var recs []ledger.Record
	var seqs []*int64
	var names []string
	for _, r := range reps {
		if r != nil {
			recs, seqs, names = append(recs, ledger.Record{Kind: records.AuditPrefix + r.Audit, Body: r}), append(seqs, &r.Seq), append(names, r.Audit+" audit")
		}
	}
	for _, c := range cmps {
		recs, seqs = append(recs, ledger.Record{Kind: records.KindComparison, Body: c}), append(seqs, &c.Seq)
	}
	if len(cmps) > 0 {
		names = append(names, "comparison")
	}
	if len(recs) == 0 {
		return nil
	}
	es, err := l.Append(ctx, recs...)
	if err != nil {
		return fmt.Errorf("record %s: %w", strings.Join(names, ", "), err)
	}
	for i, seq := range seqs {
		*seq = es[i].Seq
	}
	return nil
}

// Options tune the ledger audits; the zero value takes every default.
type Options struct {
	// MaxKLGrowth bounds the mean KL of the last tenth of training over
	// that of the first tenth (floored at KLFloor); 0: DefaultMaxKLGrowth.
	MaxKLGrowth float64 `json:"max_kl_growth,omitempty" yaml:"max_kl_growth"`
	KLFloor     float64 `json:"kl_floor,omitempty" yaml:"kl_floor"`
	// SelfGradeSample is how many gold queries are graded against
	// themselves; 0: DefaultSelfGradeSample. SelfGradeMin is the share
	// that must score 1; 0: DefaultSelfGradeMin.
	SelfGradeSample int     `json:"self_grade_sample,omitempty" yaml:"self_grade_sample"`
	SelfGradeMin    float64 `json:"self_grade_min,omitempty" yaml:"self_grade_min"`
	// GoldSubstring is the length, in normalised characters, of the gold
	// fragments the gold audit looks for; 0: DefaultGoldSubstring.
	GoldSubstring int `json:"gold_substring,omitempty" yaml:"gold_substring"`
	// NearDuplicate is the bigram Jaccard similarity from which two
	// questions count as the same; 0: DefaultNearDuplicate.
	NearDuplicate float64 `json:"near_duplicate,omitempty" yaml:"near_duplicate"`
	// SplitByDatabase makes the split audit require that train and eval
	// share no database.
	SplitByDatabase bool `json:"split_by_database,omitempty" yaml:"split_by_database"`
	// Mutate, when above 0, makes the gold audit re-play that many sampled
	// tasks of each evaluation beside a mutated gold, against the recorded
	// replies or, when MutateEndpoint is set, that endpoint at temperature 0.
	Mutate         int    `json:"mutate,omitempty" yaml:"mutate"`
	MutateEndpoint string `json:"mutate_endpoint,omitempty" yaml:"mutate_endpoint"`
}

// The defaults of Options.
const (
	DefaultMaxKLGrowth     = 10
	DefaultKLFloor         = 1e-3
	DefaultSelfGradeSample = grading.DefaultSelfGradeSample
	DefaultSelfGradeMin    = grading.DefaultSelfGradeMin
	DefaultGoldSubstring   = 40
	DefaultNearDuplicate   = 0.9
)

func (o Options) withDefaults() Options {
	if o.MaxKLGrowth == 0 {
		o.MaxKLGrowth = DefaultMaxKLGrowth
	}
	if o.KLFloor == 0 {
		o.KLFloor = DefaultKLFloor
	}
	if o.SelfGradeSample == 0 {
		o.SelfGradeSample = DefaultSelfGradeSample
	}
	if o.SelfGradeMin == 0 {
		o.SelfGradeMin = DefaultSelfGradeMin
	}
	if o.GoldSubstring == 0 {
		o.GoldSubstring = DefaultGoldSubstring
	}
	if o.NearDuplicate == 0 {
		o.NearDuplicate = DefaultNearDuplicate
	}
	return o
}

// Audit runs the ledger audit name over s.
func Audit(ctx context.Context, l *ledger.Ledger, name string, s Subjects, o Options) (*Report, error) {
	return run(ctx, l, name, s, o, nil)
}

// run runs one audit; audits that read the rollouts' episodes share cache.
func run(ctx context.Context, l *ledger.Ledger, name string, s Subjects, o Options, cache *scanCache) (*Report, error) {
	o = o.withDefaults()
	switch name {
	case AuditBudget:
		return runBudget(ctx, l, s, cache)
	case AuditTraining:
		return Training(ctx, l, s)
	case AuditIdentity:
		return Identity(ctx, l, s)
	case AuditReward:
		return runReward(ctx, l, s, o, cache)
	case AuditGold:
		return runGold(ctx, l, s, o, cache)
	case AuditSplit:
		return split(ctx, l, s, o, cache)
	}
	return nil, fmt.Errorf("audit %q: want one of %s", name, strings.Join(Audits, ", "))
}
