package reports

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
)

// FormatVersion names the report's JSON layout; fields are only added.
const FormatVersion = "rlgate.report/v1"

// Options say what a report covers.
type Options struct {
	// Subjects name the runs. Empty: those of the latest gate.verdict.
	Subjects audit.Subjects `json:"subjects,omitzero"`
	// Policy gives the claims and the statistics' parameters (alpha,
	// resamples, seed, power) when no verdict of the runs is found; a
	// verdict's own policy wins. Nil: the built-in paper-grade policy.
	Policy *audit.Policy `json:"policy,omitempty"`
	// Formats to write, of md, html and json; empty: all three. The JSON
	// is always written: --check reads from it what the report covered.
	Formats []string `json:"formats,omitempty"`
	// Head, when set, builds the report from the ledger as it was at that
	// head: entries after it are not read. Check sets it to the head the
	// report records.
	Head *ledger.Head `json:"-"`
	// Rederived, when set, is a verdict its caller has just re-derived
	// (audit.Rederive) on this ledger: if it is the verdict the report
	// rests on, Build does not re-derive it again.
	Rederived *audit.Verdict `json:"-"`
}

// Report is everything a report states, each number with the ledger
// entries behind it. Its JSON form (report.json) is a stable contract:
// fields are only ever added.
type Report struct {
	Format string `json:"format"`
	// Headline is the first line of every format: whether the claims are
	// supported, and when not, which are not.
	Headline string `json:"headline"`
	// Supported is true only when a passing gate verdict covers the runs;
	// otherwise no gain is stated anywhere.
	Supported   bool           `json:"supported"`
	Unsupported []string       `json:"unsupported_claims"`
	Head        ledger.Head    `json:"head"`
	Request     Options        `json:"request"`
	Subjects    audit.Subjects `json:"subjects"`
	Verdict     *VerdictRef    `json:"verdict"`
	// Verdicts are every gate verdict for the verdict's model, failures
	// first.
	Verdicts []VerdictRef `json:"verdicts"`
	Params   Params       `json:"params"`
	Claims   []Claim      `json:"claims"`
	Tables   []ModelTable `json:"model_tables"`
	Audits   []AuditRow   `json:"audits"`
	Budget   []BudgetRow  `json:"budget"`
	Curves   []Curve      `json:"curves"`
	Lineage  []LineageRow `json:"lineage"`
}

// VerdictRef is a gate verdict: the one a report rests on, or another
// verdict for the same model.
type VerdictRef struct {
	Seq           int64          `json:"seq"`
	OK            bool           `json:"ok"`
	Failed        int            `json:"failed"`
	Checks        int            `json:"checks"`
	Policy        string         `json:"policy"`
	PolicyDigest  ledger.Digest  `json:"policy_digest"`
	ModelIdentity *ledger.Digest `json:"model_identity,omitempty"`
	DecidedOn     ledger.Head    `json:"decided_on"`
	// Held states the claims and audits the policy held; Differences how
	// a custom policy differs from paper-grade (none for paper-grade).
	Held        string   `json:"held"`
	Differences []string `json:"differences"`
}

func verdictRef(v *audit.Verdict) VerdictRef {
	return VerdictRef{Seq: v.Seq, OK: v.OK, Failed: v.Failed, Checks: len(v.Checks), Policy: v.Policy.Name,
		PolicyDigest: v.PolicyDigest, ModelIdentity: v.ModelIdentity, DecidedOn: v.Head,
		Held: v.Policy.Held(), Differences: append([]string{}, v.Policy.Differences()...)}
}

// modelVerdicts lists every gate verdict for v's model up to the report's
// head, failures first (then by seq), so a pass that followed failures
// under other policies cannot be shown alone.
func modelVerdicts(ctx context.Context, l *ledger.Ledger, v *audit.Verdict) ([]VerdictRef, error) {
	if v.ModelIdentity == nil {
		return []VerdictRef{verdictRef(v)}, nil
	}
	all, err := audit.Verdicts(ctx, l, v.ModelIdentity)
	if err != nil {
		return nil, err
	}
	out := []VerdictRef{}
	for _, w := range all {
		out = append(out, verdictRef(w))
	}
	slices.SortStableFunc(out, func(a, b VerdictRef) int {
		if a.OK != b.OK {
			if !a.OK {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return out, nil
}

// Params are the statistics' parameters, from the verdict's policy.
type Params struct {
	Alpha     float64 `json:"alpha"`
	Resamples int     `json:"resamples"`
	Seed      uint64  `json:"seed"`
	Power     float64 `json:"power"`
	Baseline  string  `json:"baseline"`
}

// Claim is one claim of the policy as the verdict decided it; without a
// verdict it is untested.
type Claim struct {
	audit.ClaimResult
	Tested bool `json:"tested"`
	// Supported: the claim passed and so did the whole gate.
	Supported bool    `json:"supported"`
	Seqs      []int64 `json:"seqs"`
}

// ModelTable is one group of tasks (all, one difficulty, one database)
// with every model's accuracy and its paired difference to the baseline.
type ModelTable struct {
	Group string     `json:"group"` // "all", "difficulty", "database"
	Value string     `json:"value,omitempty"`
	Tasks int        `json:"tasks"`
	Rows  []ModelRow `json:"rows"`
	Seqs  []int64    `json:"seqs"` // the outcomes entries behind the table
}

// ModelRow is one model of a table; Pair is nil for the baseline.
type ModelRow struct {
	audit.ModelResult
	Pair *audit.PairResult `json:"pair,omitempty"`
}

// AuditRow is one check of the verdict.
type AuditRow = audit.GateCheck

// BudgetRow is one evaluation's budget and what its rollout spent.
type BudgetRow struct {
	Label          string         `json:"label"`
	Run            string         `json:"run"`
	Rollout        string         `json:"rollout"`
	ProtocolDigest ledger.Digest  `json:"protocol_digest"`
	TaskSet        ledger.Digest  `json:"task_set"`
	Tasks          int            `json:"tasks"`
	Samples        int            `json:"samples"`
	Temperature    float64        `json:"temperature"`
	MaxTurns       int            `json:"max_turns"`
	MaxTokens      int            `json:"max_tokens_per_turn"`
	SQLBudget      int            `json:"sql_budget"`
	Status         records.Status `json:"status"`
	Episodes       int            `json:"episodes"`
	Unfinished     int            `json:"unfinished"`
	TokensIn       int            `json:"tokens_in"`
	TokensOut      int            `json:"tokens_out"`
	Seqs           []int64        `json:"seqs"` // the rollout's run.start and run.end
}

// maxCurvePoints bounds the points a curve keeps: every k-th step and the
// last, so a 10,000-step run draws and reads quickly.
const maxCurvePoints = 200

// Curve is one training metric of one training run.
type Curve struct {
	Label  string       `json:"label"`
	Run    string       `json:"run"`
	Metric string       `json:"metric"` // reward, kl, lr, response_length
	Key    string       `json:"key"`    // the trainer's key
	Steps  int          `json:"steps"`  // points logged
	First  float64      `json:"first"`
	Last   float64      `json:"last"`
	Min    float64      `json:"min"`
	Max    float64      `json:"max"`
	Points [][2]float64 `json:"points"` // [step, value], at most maxCurvePoints
	Seqs   []int64      `json:"seqs"`   // the metrics entries behind it
}

// LineageRow is one digest of a stage: a training run's inputs and
// outputs, an evaluation's tasks, gold, protocol and model.
type LineageRow struct {
	Label  string        `json:"label"`
	Kind   string        `json:"kind"` // "train" or "eval"
	Run    string        `json:"run"`
	Stage  string        `json:"stage"`
	Role   records.Role  `json:"role"`
	Name   string        `json:"name"`
	Digest ledger.Digest `json:"digest"`
	// Source, of an evaluation's model identity, says where it came from:
	// "server" (reported by the endpoint) or "asserted" (given by the
	// user, not confirmed).
	Source string `json:"source,omitempty"`
	// ProducedBy, of a training input, is the run that wrote it (its
	// output of the same digest), as rlgate run recorded it.
	ProducedBy string `json:"produced_by,omitempty"`
	Seq        int64  `json:"seq"`
}

// curveMetrics are the training curves a report draws, by their name in
// the report.
var curveMetrics = []struct {
	name  string
	canon metrics.Canon
}{
	{"reward", metrics.RewardMean},
	{"kl", metrics.KL},
	{"lr", metrics.LearningRate},
	{"response_length", metrics.ResponseLength},
}

// labelOrder is the order models appear in: the labels the gate knows
// first, others after them by name.
func labelOrder(a, b string) int {
	known := []string{audit.LabelBase, audit.LabelSFT, audit.LabelRL, audit.LabelNoUpdate}
	ia, ib := slices.Index(known, a), slices.Index(known, b)
	if ia < 0 {
		ia = len(known)
	}
	if ib < 0 {
		ib = len(known)
	}
	return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a, b))
}

// Build reads what a report states from the ledger: the runs of the
// latest gate verdict (or those o names), their accuracies and paired
// differences overall, per difficulty and per database, the verdict's
// claims and checks, the evaluations' budgets, the training curves and
// the lineage by digest. It reads nothing after o.Head when that is set.
func Build(ctx context.Context, l *ledger.Ledger, o Options) (*Report, error) {
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	at := head.Seq
	if o.Head != nil {
		at = o.Head.Seq
	}
	// Everything a report states is read from a checked view: entries
	// re-hashed, rows derived from them, nothing after the head it is for.
	view, err := l.Checked(ctx, at)
	if errors.Is(err, ledger.ErrNotFound) && o.Head != nil {
		view, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if view != nil {
		defer view.Close()
		if head, err = view.Head(ctx); err != nil {
			return nil, err
		}
	}
	if o.Head != nil && (view == nil || head != *o.Head) {
		return nil, &ledger.Error{Op: "report as of head " + o.Head.String(), Path: l.Dir(),
			Err: errors.New("this ledger does not extend that head"), Hint: "check the report against the ledger it was made from"}
	}
	l = view
	r := &Report{Format: FormatVersion, Head: head, Request: o, Unsupported: []string{}, Claims: []Claim{}, Tables: []ModelTable{},
		Audits: []AuditRow{}, Budget: []BudgetRow{}, Curves: []Curve{}, Lineage: []LineageRow{}, Verdicts: []VerdictRef{}}
	r.Request.Formats = formats(o.Formats)
	subjects := o.Subjects
	if len(subjects.Runs) == 0 && o.Policy != nil {
		subjects = o.Policy.Subjects
	}
	v, err := audit.LatestVerdict(ctx, l, subjects)
	if err != nil {
		return nil, err
	}
	policy := audit.PaperGrade()
	if o.Policy != nil {
		policy = *o.Policy
	}
	if v != nil {
		// A verdict is stated only when it re-derives; one that does not
		// stops the report (audit.Rederive).
		if o.Rederived != nil && o.Rederived.Seq == v.Seq {
			v = o.Rederived
		} else if v, err = audit.Rederive(ctx, l, v.Seq); err != nil {
			return nil, err
		}
		policy, subjects = v.Policy, v.Policy.Subjects
		ref := verdictRef(v)
		r.Verdict = &ref
		for _, c := range v.Checks {
			if strings.HasPrefix(c.Name, "audit ") {
				r.Audits = append(r.Audits, c)
			}
		}
		if r.Verdicts, err = modelVerdicts(ctx, l, v); err != nil {
			return nil, err
		}
	}
	if len(subjects.Runs) == 0 {
		return nil, &ledger.Error{Op: "report", Path: l.Dir(), Err: errors.New("no gate verdict in the ledger names the runs, and none were given"),
			Hint: "rlgate gate --runs base=R1,rl=R2,... first, or rlgate report --runs ..."}
	}
	r.Subjects = audit.Subjects{Runs: slices.Clone(subjects.Runs), Train: slices.Clone(subjects.Train)}
	slices.SortStableFunc(r.Subjects.Runs, func(a, b audit.LabeledRun) int { return labelOrder(a.Label, b.Label) })
	slices.SortStableFunc(r.Subjects.Train, func(a, b audit.LabeledRun) int { return labelOrder(a.Label, b.Label) })
	r.Params = Params{Alpha: policy.Alpha, Resamples: policy.Resamples, Seed: policy.Seed, Power: policy.Power, Baseline: r.Subjects.Runs[0].Label}
	r.claims(policy, v)
	if err := r.models(ctx, l); err != nil {
		return nil, err
	}
	if err := r.budget(ctx, l); err != nil {
		return nil, err
	}
	if err := r.training(ctx, l); err != nil {
		return nil, err
	}
	return r, nil
}

// formats returns the formats to write, the JSON always among them, in a
// fixed order.
func formats(fs []string) []string {
	out := []string{}
	for _, f := range []string{FormatMarkdown, FormatHTML, FormatJSON} {
		if len(fs) == 0 || slices.Contains(fs, f) || f == FormatJSON {
			out = append(out, f)
		}
	}
	return out
}

// claims fills the claims and the headline: every claim is supported only
// when the verdict passed.
func (r *Report) claims(p audit.Policy, v *audit.Verdict) {
	r.Supported = v != nil && v.OK
	for _, c := range p.Claims {
		cl := Claim{ClaimResult: audit.ClaimResult{Claim: c.String()}, Seqs: []int64{}}
		if v != nil {
			for _, vc := range v.Claims {
				if vc.Claim == cl.Claim {
					cl.ClaimResult, cl.Tested = vc, vc.Tasks > 0
					cl.Seqs = append(cl.Seqs, v.Seq)
					if vc.Seq != 0 {
						cl.Seqs = append([]int64{vc.Seq}, cl.Seqs...)
					}
				}
			}
		}
		cl.Supported = r.Supported && cl.OK
		if !cl.Supported {
			r.Unsupported = append(r.Unsupported, cl.Claim)
		}
		r.Claims = append(r.Claims, cl)
	}
	switch {
	case v == nil:
		r.Headline = fmt.Sprintf("UNSUPPORTED: no gate verdict covers these runs, so the claims %s are unsupported and this report states no gain (rlgate gate decides them).",
			strings.Join(r.Unsupported, ", "))
	case !v.OK:
		r.Headline = fmt.Sprintf("UNSUPPORTED: the gate failed %d of %d checks (verdict entry %d, %s), so the claims %s are unsupported and this report states no gain.",
			v.Failed, len(v.Checks), v.Seq, PolicyStatement(v.Policy), strings.Join(r.Unsupported, ", "))
	default:
		var held []string
		for _, c := range r.Claims {
			held = append(held, c.Claim)
		}
		r.Headline = fmt.Sprintf("SUPPORTED: the gate passed all %d checks (verdict entry %d, %s): %s.", len(v.Checks), v.Seq, PolicyStatement(v.Policy), strings.Join(held, ", "))
	}
}

// PolicyStatement says in a phrase which policy a verdict held and, for a
// custom one, how it differs from paper-grade: a reader of the headline
// sees what "passed" meant without opening the policy.
func PolicyStatement(p audit.Policy) string {
	s := "policy " + p.Name + ": " + p.Held()
	if d := p.Differences(); len(d) > 0 {
		s += "; differs from " + audit.PaperGradeName + ": " + strings.Join(d, ", ")
	}
	return s
}

// models compares the evaluations on all tasks, then per difficulty and
// per database, through audit.CompareOutcomes.
func (r *Report) models(ctx context.Context, l *ledger.Ledger) error {
	runs := r.Subjects.Runs
	rows := make([][]ledger.OutcomeRow, len(runs))
	for i, lr := range runs {
		all, err := l.Outcomes(ctx, lr.Run)
		if err != nil {
			return err
		}
		for _, o := range all {
			if o.Seq <= r.Head.Seq {
				rows[i] = append(rows[i], o)
			}
		}
	}
	// The baseline's outcomes entries say where each task sits.
	where, err := audit.TaskDetails(ctx, l, rows[0])
	if err != nil {
		return err
	}
	opts := audit.CompareOptions{Runs: runs, Baseline: r.Params.Baseline, Alpha: r.Params.Alpha, Seed: r.Params.Seed, B: r.Params.Resamples, Power: r.Params.Power}
	add := func(group, value string, keep func(audit.TaskDetail) bool) error {
		sub := make([][]ledger.OutcomeRow, len(rows))
		for i := range rows {
			for _, o := range rows[i] {
				if keep == nil || keep(where[o.TaskID]) {
					sub[i] = append(sub[i], o)
				}
			}
		}
		c, err := audit.CompareOutcomes(opts, sub)
		if err != nil {
			return fmt.Errorf("report table %s: %w", strings.TrimSpace(group+" "+value), err)
		}
		t := ModelTable{Group: group, Value: value, Tasks: c.Tasks, Seqs: c.OutcomeSeqs}
		for _, m := range c.Models {
			row := ModelRow{ModelResult: m}
			for j := range c.Pairs {
				if c.Pairs[j].Label == m.Label {
					row.Pair = &c.Pairs[j]
				}
			}
			t.Rows = append(t.Rows, row)
		}
		r.Tables = append(r.Tables, t)
		return nil
	}
	if err := add("all", "", nil); err != nil {
		return err
	}
	for _, g := range []struct {
		name string
		of   func(audit.TaskDetail) string
	}{{"difficulty", func(d audit.TaskDetail) string { return d.Difficulty }}, {"database", func(d audit.TaskDetail) string { return d.DBID }}} {
		values := map[string]grading.Bucket{}
		for _, d := range where {
			if v := g.of(d); v != "" {
				values[v] = grading.Bucket{}
			}
		}
		order := slices.Sorted(maps.Keys(values))
		if g.name == "difficulty" {
			order = grading.DifficultyOrder(values) // simple, moderate, challenging, as BIRD prints them
		}
		for _, v := range order {
			if err := add(g.name, v, func(d audit.TaskDetail) bool { return g.of(d) == v }); err != nil {
				return err
			}
		}
	}
	return nil
}

// budget lists each evaluation's protocol budget and its rollout's use.
func (r *Report) budget(ctx context.Context, l *ledger.Ledger) error {
	for _, lr := range r.Subjects.Runs {
		gr, err := l.RunStatus(ctx, lr.Run)
		if err != nil {
			return fmt.Errorf("evaluation %s=%s: %w", lr.Label, lr.Run, err)
		}
		// A grading of a rollout or of a predictions file: the fields
		// read here (stage, rollout, gold_digest) are the same in both.
		gs, err := ledger.DecodeEntry[grading.TrajectoryStart](ctx, l, gr.StartedSeq)
		if err != nil {
			return err
		}
		if gs.Rollout == "" {
			continue // a grading of a predictions file: no rollout, no budget
		}
		s, err := rollout.ReadStart(ctx, l, gs.Rollout)
		if err != nil {
			return err
		}
		rr, err := l.RunStatus(ctx, gs.Rollout)
		if err != nil {
			return err
		}
		p := s.Protocol
		b := BudgetRow{Label: lr.Label, Run: lr.Run, Rollout: gs.Rollout, ProtocolDigest: s.ProtocolDigest, TaskSet: s.TaskSet, Tasks: s.Count,
			Samples: p.Sampling.N, Temperature: p.Sampling.Temperature, MaxTurns: p.MaxTurns, MaxTokens: p.MaxTokensPerTurn, SQLBudget: p.SQLBudget,
			Status: records.StatusRunning, Seqs: []int64{rr.StartedSeq}}
		if rr.EndedSeq != nil && *rr.EndedSeq <= r.Head.Seq {
			var end rollout.End
			if err := l.DecodeBody(ctx, *rr.EndedSeq, &end); err != nil {
				return err
			}
			b.Status, b.Episodes, b.Unfinished, b.TokensIn, b.TokensOut = end.Status, end.Episodes, end.Unfinished, end.TokensIn, end.TokensOut
			b.Seqs = append(b.Seqs, *rr.EndedSeq)
		}
		r.Budget = append(r.Budget, b)
		r.Lineage = append(r.Lineage,
			LineageRow{Label: lr.Label, Kind: "eval", Run: gs.Rollout, Stage: s.Stage, Role: records.RoleInput, Name: "tasks", Digest: s.TasksDigest, Seq: rr.StartedSeq},
			LineageRow{Label: lr.Label, Kind: "eval", Run: gs.Rollout, Stage: s.Stage, Role: records.RoleInput, Name: "task_set", Digest: s.TaskSet, Seq: rr.StartedSeq},
			LineageRow{Label: lr.Label, Kind: "eval", Run: gs.Rollout, Stage: s.Stage, Role: records.RoleInput, Name: "protocol", Digest: s.ProtocolDigest, Seq: rr.StartedSeq})
		if s.ModelIdentity != nil {
			r.Lineage = append(r.Lineage, LineageRow{Label: lr.Label, Kind: "eval", Run: gs.Rollout, Stage: s.Stage, Role: records.RoleInput, Name: "model_identity", Digest: *s.ModelIdentity,
				Source: s.Source(), Seq: rr.StartedSeq})
		}
		r.Lineage = append(r.Lineage, LineageRow{Label: lr.Label, Kind: "eval", Run: lr.Run, Stage: gs.Stage, Role: records.RoleInput, Name: "gold", Digest: gs.GoldDigest, Seq: gr.StartedSeq})
	}
	return nil
}

// training draws each training run's curves and lists its artifacts,
// then does the same for every training stage upstream of them that the
// policy does not name (a curriculum's first RL stage, whose checkpoint the
// second starts from): following each input to the run that wrote it, as
// rlgate run recorded it, until a run's inputs have no producer. Such a
// stage is labelled "stage NAME". Only runs that wrote a checkpoint count
// as training; each run is shown once, however many paths lead to it.
func (r *Report) training(ctx context.Context, l *ledger.Ledger) error {
	queue := slices.Clone(r.Subjects.Train)
	seen := map[string]bool{}
	for _, lr := range queue {
		seen[lr.Run] = true
	}
	for i := 0; i < len(queue); i++ {
		lr := queue[i]
		tr, err := l.RunStatus(ctx, lr.Run)
		if err != nil {
			return fmt.Errorf("training %s=%s: %w", lr.Label, lr.Run, err)
		}
		var start runner.StartBody
		if err := l.DecodeBody(ctx, tr.StartedSeq, &start); err != nil {
			return err
		}
		if i >= len(r.Subjects.Train) {
			lr.Label = "stage " + start.Stage
		}
		rows, trained, err := r.artifacts(ctx, l, lr, start.Stage)
		if err != nil {
			return err
		}
		if i >= len(r.Subjects.Train) && !trained {
			continue // a data stage (an export, a synthesis): not training
		}
		for j, x := range rows {
			if x.ProducedBy == "" {
				continue
			}
			// A run that wrote back bytes it read (the No-update control,
			// lr = 0) did not produce them: the input came from upstream
			// of it, and it is no stage of this model.
			up, _, err := r.artifacts(ctx, l, audit.LabeledRun{Run: x.ProducedBy}, "")
			if err != nil {
				return err
			}
			if slices.ContainsFunc(up, func(u LineageRow) bool { return u.Role == records.RoleInput && u.Digest == x.Digest }) {
				rows[j].ProducedBy = ""
				continue
			}
			if !seen[x.ProducedBy] {
				seen[x.ProducedBy] = true
				queue = append(queue, audit.LabeledRun{Run: x.ProducedBy})
			}
		}
		r.Lineage = append(r.Lineage, rows...)
		for _, m := range curveMetrics {
			s, err := audit.CanonSeries(ctx, l, lr.Run, m.canon)
			if err != nil {
				return err
			}
			if c := r.curve(lr, m.name, s); c != nil {
				r.Curves = append(r.Curves, *c)
			}
		}
	}
	return nil
}

// artifacts returns a training run's lineage rows up to the report's head,
// each input with the run that wrote it as recorded, and whether the run
// wrote a checkpoint.
func (r *Report) artifacts(ctx context.Context, l *ledger.Ledger, lr audit.LabeledRun, stage string) (rows []LineageRow, trained bool, err error) {
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindArtifact, Run: lr.Run}) {
		if err != nil {
			return nil, false, err
		}
		if e.Seq > r.Head.Seq {
			break
		}
		var a struct {
			ledger.Artifact
			ProducedBy *runner.Lineage `json:"produced_by"`
		}
		if err := json.Unmarshal(e.Body, &a); err != nil {
			return nil, false, fmt.Errorf("training %s=%s: entry %d: %w", lr.Label, lr.Run, e.Seq, err)
		}
		trained = trained || a.Role == records.RoleOutput && a.Kind == records.ArtifactCheckpoint
		row := LineageRow{Label: lr.Label, Kind: "train", Run: lr.Run, Stage: stage, Role: a.Role, Name: a.Name, Digest: a.Digest, Seq: e.Seq}
		if a.Role == records.RoleInput && a.ProducedBy != nil && a.ProducedBy.Run != "" && a.ProducedBy.Run != lr.Run {
			row.ProducedBy = a.ProducedBy.Run
		}
		rows = append(rows, row)
	}
	return rows, trained, nil
}

// curve summarises a series logged up to the report's head (NewCurve).
func (r *Report) curve(lr audit.LabeledRun, name string, s *audit.Series) *Curve {
	return NewCurve(lr, name, s, r.Head.Seq)
}

// NewCurve summarises series s of run lr as curve name: the points logged
// in entries up to seq head that are finite, at most maxCurvePoints of
// them kept; nil when there are none. The report and rlgate ui (a run's
// metrics) draw what it returns with CurveChart.
func NewCurve(lr audit.LabeledRun, name string, s *audit.Series, head int64) *Curve {
	if s == nil {
		return nil
	}
	var pts []ledger.MetricPoint
	seqs := map[int64]bool{}
	for i, p := range s.Points {
		if s.Seqs[i] <= head && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
			pts = append(pts, p)
			seqs[s.Seqs[i]] = true
		}
	}
	if len(pts) == 0 {
		return nil
	}
	c := &Curve{Label: lr.Label, Run: lr.Run, Metric: name, Key: s.Key, Steps: len(pts), First: pts[0].Value, Last: pts[len(pts)-1].Value,
		Min: pts[0].Value, Max: pts[0].Value, Seqs: slices.Sorted(maps.Keys(seqs))}
	stride := (len(pts) + maxCurvePoints - 2) / (maxCurvePoints - 1)
	for i, p := range pts {
		c.Min, c.Max = min(c.Min, p.Value), max(c.Max, p.Value)
		if i%stride == 0 || i == len(pts)-1 {
			c.Points = append(c.Points, [2]float64{float64(p.Step), p.Value})
		}
	}
	return c
}
