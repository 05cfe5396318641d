package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stats"
	"golang.org/x/sync/errgroup"
)

// GateCheck is one row of the gate's table: an audit finding or a claim.
type GateCheck struct {
	Name    string  `json:"name"` // "audit NAME: CHECK" or "claim A > B"
	OK      bool    `json:"ok"`
	Message string  `json:"message"`
	Seqs    []int64 `json:"seqs,omitempty"`
}

// ClaimResult is a claim of the policy tested on the paired outcomes.
type ClaimResult struct {
	Claim    string         `json:"claim"`
	Group    Group          `json:"group,omitempty"` // the difficulty levels it was tested on; empty: every task
	OK       bool           `json:"ok"`
	Tasks    int            `json:"tasks"`
	Delta    float64        `json:"delta"`
	CI       stats.Interval `json:"ci"` // paired bootstrap percentile interval at 1 − alpha
	B        int            `json:"b"`  // tasks only Better solved
	C        int            `json:"c"`  // tasks only Than solved
	ExactP   float64        `json:"exact_p"`
	HolmP    float64        `json:"holm_p"`
	MDE      stats.Value    `json:"mde,omitzero"`
	Seq      int64          `json:"comparison_seq,omitempty"`
	Problems []string       `json:"problems,omitempty"`
	// Repeats names the earlier claim this one is the same test as: its
	// two evaluations are of the same two models (as the No-update
	// control, trained with lr = 0, is the model it started from). It
	// takes that claim's figures and result and is not counted again in
	// the Holm adjustment.
	Repeats string `json:"repeats,omitempty"`
}

// AuditRef names an audit the gate ran and the entry it was recorded as.
type AuditRef struct {
	Audit  string `json:"audit"`
	OK     bool   `json:"ok"`
	Failed int    `json:"failed"`
	Seq    int64  `json:"seq,omitempty"`
	Error  string `json:"error,omitempty"` // why it could not run
}

// Verdict is the gate's result, recorded as a gate.verdict entry bound to
// the model it lets through and to the ledger it was decided on. Its JSON
// form is a stable contract: fields are only ever added.
//
// A verdict is never trusted as stored: every command that acts on one
// (publish, report, report --check, verify-bundle --ledger) re-derives it
// with Rederive, which re-runs the decision on the entries it read and
// refuses a verdict that does not come out the same check for check.
type Verdict struct {
	OK     bool   `json:"ok"`
	Failed int    `json:"failed"`
	Policy Policy `json:"policy"`
	// PolicyDigest is the digest of the policy without its subjects
	// (Policy.Digest), SubjectsDigest that of the runs it judged, so two
	// verdicts of one policy on different runs share the first.
	PolicyDigest   ledger.Digest `json:"policy_digest"`
	SubjectsDigest ledger.Digest `json:"subjects_digest"`
	// PolicySource is the blob holding the exact bytes the policy was
	// read from (a file, or PaperGradeSource for the built-in policy);
	// the entry names it, so its hash covers them.
	PolicySource  ledger.Digest  `json:"policy_source"`
	ModelIdentity *ledger.Digest `json:"model_identity,omitempty"`
	// Run is the rl training run whose output the verdict lets through,
	// and Manifest that output's checkpoint manifest (every file by
	// digest): publish ships exactly that run's files.
	Run      string         `json:"run,omitempty"`
	Manifest *ledger.Digest `json:"manifest,omitempty"`
	// Basis is the head of the entries the decision read; the entries
	// after it up to Head are the gate's own audit and comparison records.
	Basis  ledger.Head   `json:"basis"`
	Head   ledger.Head   `json:"head"` // the entry before the verdict
	Audits []AuditRef    `json:"audits"`
	Claims []ClaimResult `json:"claims"`
	Checks []GateCheck   `json:"checks"`
	Seq    int64         `json:"seq,omitempty"`
	// Resolved are the runs the policy or the flags named by their stage,
	// with the run each was taken to be (the subjects hold those runs).
	// Rederive resolves them again on the entries the verdict read.
	Resolved []Resolution `json:"resolved,omitempty"`
}

// GateOptions change how Gate runs, not what it decides.
type GateOptions struct {
	// DryRun decides as Gate does and records nothing: no audit, no
	// comparison, no verdict entry, so it runs on a ledger opened
	// read-only. Its Verdict has no Seq and cites only entries that were
	// there before.
	DryRun bool
}

// Gate runs every audit of the policy and tests every claim on a checked
// view of the ledger (ledger.Checked: every entry re-hashed, the derived
// rows rebuilt from them), records each audit and comparison, then the
// verdict with the policy's source bytes as a blob, and returns it. A
// check that fails, or an audit that cannot run for what the ledger holds,
// fails the gate; an error means the ledger could not be read or written.
func Gate(ctx context.Context, l *ledger.Ledger, p Policy, o GateOptions) (*Verdict, error) {
	if len(p.Subjects.Runs) == 0 {
		return nil, errors.New("gate: name the evaluations to gate (runs), on the command line or in the policy")
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	r, err := l.Checked(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// A run named by its stage is the stage's latest run that ended ok
	// now; the verdict records which, so it means the same run later.
	var resolved []Resolution
	if p.Subjects, resolved, err = ResolveStages(ctx, r, p.Subjects); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if p, err = ForLineage(ctx, r, p); err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	src, err := p.source()
	if err != nil {
		return nil, err
	}
	w := l
	if o.DryRun {
		w = nil
	}
	v, err := decide(ctx, r, w, p)
	if err != nil {
		return nil, err
	}
	v.Resolved = resolved
	if v.Basis, err = r.Head(ctx); err != nil {
		return nil, err
	}
	if o.DryRun {
		v.Head = v.Basis
		return v, nil
	}
	if v.PolicySource, err = l.PutBlobBytes(src); err != nil {
		return nil, fmt.Errorf("record the gate's policy: %w", err)
	}
	if v.Head, err = l.Head(ctx); err != nil {
		return nil, err
	}
	es, err := l.Append(ctx, ledger.Record{Kind: records.KindVerdict, Body: v, Blobs: []ledger.Digest{v.PolicySource}})
	if err != nil {
		return nil, fmt.Errorf("record gate verdict: %w", err)
	}
	v.Seq = es[0].Seq
	return v, nil
}

// ForLineage returns p, or, when p is the built-in paper-grade (not a
// policy file) and the rl training run descends from the sft run's output
// (RL after SFT, following the lineage rlgate run recorded), the built-in
// paper-grade-sft with p's runs and options: the default claims follow
// the pipeline. A run that cannot be read leaves p as it is, for the
// audits to report.
func ForLineage(ctx context.Context, l *ledger.Ledger, p Policy) (Policy, error) {
	rl, sft := labeled(p.Subjects.Train, LabelRL), labeled(p.Subjects.Train, LabelSFT)
	if p.Name != PaperGradeName || p.Source != nil || rl == "" || sft == "" {
		return p, nil
	}
	ts, err := loadTrains(ctx, l, []LabeledRun{{Label: LabelRL, Run: rl}})
	if err != nil {
		return p, nil
	}
	in := ts[0].checkpoint(records.RoleInput, "base")
	if in == nil {
		return p, nil
	}
	follows, err := descendsFrom(ctx, l, in, sft)
	if err != nil || !follows {
		return p, err
	}
	q := PaperGradeSFT()
	q.Subjects, q.Options = p.Subjects, p.Options
	return q, nil
}

// decide runs the policy's audits and claims reading only r, and records
// each audit and comparison in w unless w is nil (a dry run, or a
// re-derivation). Everything it returns follows from r's entries and p.
func decide(ctx context.Context, r, w *ledger.Ledger, p Policy) (*Verdict, error) {
	s := p.Subjects
	v := &Verdict{Policy: p, Audits: []AuditRef{}, Claims: []ClaimResult{}, Checks: []GateCheck{}}
	var err error
	if v.PolicyDigest, err = p.Digest(); err != nil {
		return nil, err
	}
	if v.SubjectsDigest, err = s.Digest(); err != nil {
		return nil, err
	}
	// The audits and the claims' comparisons run at once (each is mostly
	// sequential) and are recorded with one commit, the audits in the
	// policy's order, then the comparisons in the claims' order.
	cache := &scanCache{}
	reps, errs := make([]*Report, len(p.Audits)), make([]error, len(p.Audits))
	var g errgroup.Group
	for i, name := range p.Audits {
		g.Go(func() error {
			if reps[i], errs[i] = run(ctx, r, name, s, p.Options, cache); errs[i] != nil {
				reps[i] = nil
			}
			return nil
		})
	}
	var tests []claimTest
	g.Go(func() (err error) {
		tests, err = testClaims(ctx, r, p)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if w != nil {
		var cmps []*Comparison
		for _, t := range tests {
			if t.cmp != nil {
				cmps = append(cmps, t.cmp)
			}
		}
		if err := record(ctx, w, reps, cmps); err != nil {
			return nil, err
		}
	}
	for i, name := range p.Audits {
		rep, err := reps[i], errs[i]
		if err != nil {
			v.Audits = append(v.Audits, AuditRef{Audit: name, Error: err.Error()})
			v.add(GateCheck{Name: "audit " + name, Message: "could not run: " + err.Error()})
			continue
		}
		seqs := []int64{}
		if w != nil {
			seqs = append(seqs, rep.Seq)
		}
		v.Audits = append(v.Audits, AuditRef{Audit: name, OK: rep.OK, Failed: rep.Failed, Seq: rep.Seq})
		for _, f := range rep.Findings {
			v.add(GateCheck{Name: "audit " + name + ": " + f.Check, OK: f.OK, Message: f.Message, Seqs: append(slices.Clone(f.Seqs), seqs...)})
		}
	}
	if err := v.claims(p, tests); err != nil {
		return nil, err
	}
	checks, err := reproducedChecks(ctx, r, p.Reproduced)
	if err != nil {
		return nil, err
	}
	for _, c := range checks {
		v.add(c)
	}
	v.gated(ctx, r, s)
	return v, nil
}

func (v *Verdict) add(c GateCheck) {
	slices.Sort(c.Seqs)
	c.Seqs = slices.Compact(c.Seqs)
	v.Checks = append(v.Checks, c)
	if !c.OK {
		v.Failed++
	}
	v.OK = v.Failed == 0
}

// claimTest is one claim's comparison (on its group's tasks for a claim
// on a group), or the earlier claim it repeats, or why there is neither.
type claimTest struct {
	cmp     *Comparison
	repeats int // index of the claim it repeats; -1: none
	why     string
	problem string
}

// testClaims compares each claim's evaluations, reading only r. A claim
// whose two evaluations are of the same two models as an earlier tested
// claim's, on the same tasks, is that claim's test again: it is not
// compared a second time.
func testClaims(ctx context.Context, r *ledger.Ledger, p Policy) ([]claimTest, error) {
	out := make([]claimTest, len(p.Claims))
	models := evaluatedModels(ctx, r, p.Subjects.Runs)
	for i, c := range p.Claims {
		out[i].repeats = -1
		better, than := labeled(p.Subjects.Runs, c.Better), labeled(p.Subjects.Runs, c.Than)
		if better == "" || than == "" {
			out[i].problem = fmt.Sprintf("no evaluation is labelled %s", map[bool]string{true: c.Better, false: c.Than}[better == ""])
			continue
		}
		if j, why := repeated(p.Claims[:i], out[:i], c, models); j >= 0 {
			out[i].repeats, out[i].why = j, why
			continue
		}
		opts := CompareOptions{Runs: []LabeledRun{{c.Than, than}, {c.Better, better}}, Alpha: p.Alpha, Seed: p.Seed, B: p.Resamples, Power: p.Power}
		var err error
		if c.On != "" {
			out[i].cmp, err = compareOn(ctx, r, opts, c.On)
		} else {
			out[i].cmp, err = Compare(ctx, r, opts)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out[i].problem = err.Error()
		}
	}
	return out, nil
}

// evaluatedModels returns the model identity each labelled evaluation
// recorded; an evaluation that cannot be read, or recorded none, is left
// out (its claims then fail or are compared as usual).
func evaluatedModels(ctx context.Context, r *ledger.Ledger, runs []LabeledRun) map[string]ledger.Digest {
	out := map[string]ledger.Digest{}
	for _, lr := range runs {
		evals, err := loadEvals(ctx, r, []LabeledRun{lr})
		if err == nil && evals[0].rollout.ModelIdentity != nil {
			out[lr.Label] = *evals[0].rollout.ModelIdentity
		}
	}
	return out
}

// repeated returns the index of the earlier tested claim that c repeats
// (the same models on both sides, the same group), and why; -1 if none.
func repeated(earlier []Claim, tests []claimTest, c Claim, models map[string]ledger.Digest) (int, string) {
	mb, okb := models[c.Better]
	mt, okt := models[c.Than]
	if !okb || !okt {
		return -1, ""
	}
	for i, e := range earlier {
		if tests[i].cmp == nil || e.On != c.On || models[e.Better] != mb || models[e.Than] != mt {
			continue
		}
		var same []string
		if e.Better != c.Better {
			same = append(same, fmt.Sprintf("%s and %s", c.Better, e.Better))
		}
		if e.Than != c.Than {
			same = append(same, fmt.Sprintf("%s and %s", c.Than, e.Than))
		}
		return i, fmt.Sprintf("%s evaluated the same model", strings.Join(same, ", and "))
	}
	return -1, ""
}

// claims judges each claim by its test (tests, in the claims' order),
// Holm-adjusts the exact McNemar p across the claims, and adds a check per
// claim.
func (v *Verdict) claims(p Policy, tests []claimTest) error {
	var ps []float64
	var tested []int
	for i, c := range p.Claims {
		cr := ClaimResult{Claim: c.String(), Group: c.On}
		if t := tests[i]; t.repeats >= 0 {
			o := v.Claims[t.repeats]
			cr.Repeats = o.Claim
			cr.Tasks, cr.Delta, cr.CI, cr.B, cr.C, cr.ExactP, cr.MDE, cr.Seq = o.Tasks, o.Delta, o.CI, o.B, o.C, o.ExactP, o.MDE, o.Seq
		} else if t.cmp == nil {
			cr.Problems = append(cr.Problems, t.problem)
		} else {
			pr := t.cmp.Pairs[0]
			cr.Tasks, cr.Delta, cr.CI, cr.B, cr.C, cr.ExactP, cr.MDE, cr.Seq = t.cmp.Tasks, pr.Delta, pr.Bootstrap.Percentile, pr.B, pr.C, pr.McNemar.ExactP, pr.MDE, t.cmp.Seq
			ps = append(ps, cr.ExactP)
			tested = append(tested, len(v.Claims))
		}
		v.Claims = append(v.Claims, cr)
	}
	if len(ps) > 0 {
		holm, err := stats.Holm(ps, p.Alpha)
		if err != nil {
			return err
		}
		for i, ci := range tested {
			v.Claims[ci].HolmP = holm.Adjusted[i]
		}
	}
	for i := range v.Claims {
		cr := &v.Claims[i]
		t := tests[i]
		if t.repeats >= 0 {
			// The claim it repeats came first, so it is judged already.
			o := v.Claims[t.repeats]
			cr.HolmP, cr.Problems = o.HolmP, slices.Clone(o.Problems)
		}
		if slices.Contains(tested, i) {
			if cr.Delta <= 0 {
				cr.Problems = append(cr.Problems, fmt.Sprintf("Δ %+.4f is not a gain", cr.Delta))
			}
			if cr.CI.Lo <= 0 {
				cr.Problems = append(cr.Problems, fmt.Sprintf("the %g%% bootstrap interval [%+.4f, %+.4f] reaches 0", 100*(1-p.Alpha), cr.CI.Lo, cr.CI.Hi))
			}
			if cr.HolmP >= p.Alpha {
				cr.Problems = append(cr.Problems, fmt.Sprintf("Holm-adjusted exact McNemar p %.4g is not below %g", cr.HolmP, p.Alpha))
			}
		}
		cr.OK = len(cr.Problems) == 0
		msg := fmt.Sprintf("Δ %+.4f over %d tasks, %g%% CI [%+.4f, %+.4f], b=%d c=%d, exact p %.4g, Holm p %.4g, MDE %.4f",
			cr.Delta, cr.Tasks, 100*(1-p.Alpha), cr.CI.Lo, cr.CI.Hi, cr.B, cr.C, cr.ExactP, cr.HolmP, cr.MDE)
		switch {
		case t.repeats >= 0:
			msg = fmt.Sprintf("the same test as claim %s (%s), not counted again in the Holm adjustment: %s", cr.Repeats, t.why, msg)
		case !slices.Contains(tested, i):
			msg = "not tested"
		}
		for _, pr := range cr.Problems {
			msg += "; " + pr
		}
		var seqs []int64
		if cr.Seq != 0 {
			seqs = []int64{cr.Seq}
		}
		v.add(GateCheck{Name: "claim " + cr.Claim, OK: cr.OK, Message: msg, Seqs: seqs})
	}
	return nil
}

// gated sets what a passing verdict lets through: the model identity the
// rl evaluation recorded, else the rl training run's output; and the rl
// training run with its output checkpoint's manifest, which publish ships.
func (v *Verdict) gated(ctx context.Context, r *ledger.Ledger, s Subjects) {
	if run := labeled(s.Runs, LabelRL); run != "" {
		evals, err := loadEvals(ctx, r, []LabeledRun{{LabelRL, run}})
		if err == nil && evals[0].rollout.ModelIdentity != nil {
			v.ModelIdentity = evals[0].rollout.ModelIdentity
		}
	}
	run := labeled(s.Train, LabelRL)
	if run == "" {
		return
	}
	trains, err := loadTrains(ctx, r, []LabeledRun{{LabelRL, run}})
	if err != nil {
		return
	}
	if a := trains[0].checkpoint(records.RoleOutput, "ckpt"); a != nil {
		v.Run, v.Manifest = run, a.Manifest
		if v.ModelIdentity == nil {
			v.ModelIdentity = &a.Digest
		}
	}
}

// Summary says in one line how the verdict came out and where it is.
func (v *Verdict) Summary() string {
	where := fmt.Sprintf("verdict entry %d", v.Seq)
	if v.Seq == 0 {
		where = "dry run, nothing recorded"
	}
	if v.OK {
		return fmt.Sprintf("passed all %d checks (%s)", len(v.Checks), where)
	}
	var failed []string
	for _, c := range v.Checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	return fmt.Sprintf("failed %d of %d checks: %s (%s)", v.Failed, len(v.Checks), strings.Join(slices.Compact(failed), ", "), where)
}
