package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// ErrVerdictRefused is wrapped by every error Rederive returns for a
// verdict it will not stand behind.
var ErrVerdictRefused = errors.New("the gate verdict does not hold")

// VerdictError says which verdict was refused and why, naming the first
// thing that differs. It wraps ErrVerdictRefused.
type VerdictError struct {
	Seq int64
	Why string
}

func (e *VerdictError) Error() string {
	return fmt.Sprintf("gate verdict entry %d is refused: %s. Nothing was published, reported or confirmed under it. Try: rlgate gate again on these runs", e.Seq, e.Why)
}

func (e *VerdictError) Unwrap() error { return ErrVerdictRefused }

// Rederive returns the gate verdict recorded at entry seq of l only if it
// holds: the ledger's entries up to it are intact (ledger.Checked), the
// verdict agrees with itself (its ok with its failed count and checks, its
// head with the entry before it), its policy is the one its recorded
// source bytes give, and the gate's decision, run again on the entries it
// read with that policy, reproduces it check for check. Publish, report,
// report --check and verify-bundle --ledger act on a verdict only through
// Rederive, so neither a flipped field, a verdict appended with correct
// hashes, nor an edited derived row can let anything through.
func Rederive(ctx context.Context, l *ledger.Ledger, seq int64) (*Verdict, error) {
	r, err := l.Checked(ctx, seq)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return rederive(ctx, r, seq)
}

// rederive is Rederive on a checked view whose head is the verdict.
func rederive(ctx context.Context, r *ledger.Ledger, seq int64) (*Verdict, error) {
	refuse := func(format string, args ...any) error {
		return &VerdictError{Seq: seq, Why: fmt.Sprintf(format, args...)}
	}
	e, err := r.EntryBySeq(ctx, seq)
	if err != nil {
		return nil, err
	}
	if e.Kind != records.KindVerdict {
		return nil, refuse("it is a %s entry, not a %s", e.Kind, records.KindVerdict)
	}
	var v Verdict
	if err := json.Unmarshal(e.Body, &v); err != nil {
		return nil, refuse("its body does not read as a verdict: %v", err)
	}
	v.Seq = seq
	if why := v.inconsistency(ctx, r, e); why != "" {
		return nil, refuse("%s", why)
	}
	raw, err := r.ReadBlob(v.PolicySource)
	if err != nil {
		return nil, refuse("its policy source %s cannot be read: %v", v.PolicySource, err)
	}
	p, err := ParsePolicy(v.Policy.Name, raw)
	if err != nil {
		return nil, refuse("its recorded policy source does not load: %v", err)
	}
	// The command line may name the runs and tune the audits' options
	// over a policy file; both are recorded in the verdict.
	p.Subjects, p.Options = v.Policy.Subjects, v.Policy.Options
	if err := p.Check(); err != nil {
		return nil, refuse("its policy, with the runs and options it records, is not one the gate accepts: %v", err)
	}
	p.Source = raw
	if !sameJSON(v.Policy, p) {
		return nil, refuse("its policy is not the one its recorded source %s gives", v.PolicySource)
	}
	if why := v.resolvedAgain(ctx, r); why != "" {
		return nil, refuse("%s", why)
	}
	again, err := decide(ctx, r, nil, p)
	if err != nil {
		return nil, refuse("its decision cannot be re-run: %v", err)
	}
	if why := v.reproducedBy(again); why != "" {
		return nil, refuse("it does not reproduce: %s", why)
	}
	return &v, nil
}

// resolvedAgain says how the runs v names by their stages differ when
// resolved again on r, the entries v read: each stage's latest run that
// ended ok must be the run v records for it; "" when they agree.
func (v *Verdict) resolvedAgain(ctx context.Context, r *ledger.Ledger) string {
	if len(v.Resolved) == 0 {
		return ""
	}
	named := Subjects{Runs: slices.Clone(v.Policy.Subjects.Runs), Train: slices.Clone(v.Policy.Subjects.Train)}
	for _, res := range v.Resolved {
		lrs := map[bool][]LabeledRun{false: named.Runs, true: named.Train}[res.Train]
		i := slices.IndexFunc(lrs, func(lr LabeledRun) bool { return lr.Label == res.Label && lr.Run == res.Run })
		if i < 0 {
			return fmt.Sprintf("it says stage %s gave its %s, which its runs do not hold", res.Stage, res.Label)
		}
		lrs[i].Run = res.Stage
	}
	again, res, err := ResolveStages(ctx, r, named)
	switch {
	case err != nil:
		return fmt.Sprintf("the stages it names do not resolve again: %v", err)
	case !sameJSON(again, v.Policy.Subjects) || !sameJSON(res, v.Resolved):
		return "the stages it names resolve to other runs on the entries it read"
	}
	return ""
}

// inconsistency says how v, the body of entry e, disagrees with itself or
// with the entries around it; "" when it does not.
func (v *Verdict) inconsistency(ctx context.Context, r *ledger.Ledger, e ledger.Entry) string {
	if v.PolicySource == (ledger.Digest{}) {
		return "it records no policy source (an rlgate from before verdicts were re-derived wrote it)"
	}
	if !slices.Contains(e.Blobs, v.PolicySource) {
		return fmt.Sprintf("its entry does not name its policy source %s as a blob", v.PolicySource)
	}
	failed := 0
	for _, c := range v.Checks {
		if !c.OK {
			failed++
		}
	}
	switch {
	case failed != v.Failed:
		return fmt.Sprintf("it says %d checks failed, and %d of its checks failed", v.Failed, failed)
	case v.OK != (failed == 0):
		return fmt.Sprintf("it says ok=%v with %d failed checks", v.OK, failed)
	case len(v.Checks) == 0:
		return "it holds no checks"
	}
	for _, cr := range v.Claims {
		i := slices.IndexFunc(v.Checks, func(c GateCheck) bool { return c.Name == "claim "+cr.Claim })
		if i < 0 || v.Checks[i].OK != cr.OK {
			return fmt.Sprintf("its claim %s says ok=%v, and its check says otherwise", cr.Claim, cr.OK)
		}
	}
	for _, a := range v.Audits {
		if a.OK != (a.Failed == 0 && a.Error == "") {
			return fmt.Sprintf("its audit %s says ok=%v with %d failed findings", a.Audit, a.OK, a.Failed)
		}
	}
	if v.Head.LedgerID != r.ID() || v.Head.Seq != e.Seq-1 || e.Prev != v.Head.Hash {
		return fmt.Sprintf("its head %s is not the entry before it (%s/%d/%s)", v.Head, r.ID(), e.Seq-1, e.Prev)
	}
	if v.Basis.LedgerID != r.ID() || v.Basis.Seq < 1 || v.Basis.Seq > v.Head.Seq {
		return fmt.Sprintf("its basis %s is not an entry before it", v.Basis)
	}
	// The entries between the basis and the verdict are the gate's own
	// audit and comparison records; anything else would have been read
	// by a re-derivation and not by the gate.
	for o, err := range r.Entries(ctx, ledger.Filter{AfterSeq: v.Basis.Seq - 1}) {
		if err != nil {
			return err.Error()
		}
		switch {
		case o.Seq == v.Basis.Seq:
			if o.Hash != v.Basis.Hash {
				return fmt.Sprintf("its basis %s is not entry %d of this ledger", v.Basis, o.Seq)
			}
		case o.Seq >= e.Seq:
			return ""
		case !strings.HasPrefix(o.Kind, records.AuditPrefix) && o.Kind != records.KindComparison:
			return fmt.Sprintf("entry %d (%s) lies between the entries it read (up to %d) and it, and the gate writes no such entry", o.Seq, o.Kind, v.Basis.Seq)
		}
	}
	return ""
}

// reproducedBy says where again, the decision re-run, differs from v;
// "" when it reproduces v check for check. The entries the gate recorded
// itself (after the basis) are left out of the comparison: a re-run
// records nothing.
func (v *Verdict) reproducedBy(again *Verdict) string {
	own := func(seqs []int64) []int64 {
		return slices.DeleteFunc(slices.Clone(seqs), func(s int64) bool { return s > v.Basis.Seq && s < v.Seq })
	}
	for i, c := range v.Checks {
		if i >= len(again.Checks) {
			return fmt.Sprintf("check %d (%s) is not among the %d checks the policy gives", i+1, c.Name, len(again.Checks))
		}
		a := again.Checks[i]
		switch {
		case a.Name != c.Name:
			return fmt.Sprintf("check %d is %q, re-derived %q", i+1, c.Name, a.Name)
		case a.OK != c.OK:
			return fmt.Sprintf("check %q: recorded %s, re-derived %s (%s)", c.Name, passFailWord(c.OK), passFailWord(a.OK), a.Message)
		case a.Message != c.Message:
			return fmt.Sprintf("check %q: recorded %q, re-derived %q", c.Name, c.Message, a.Message)
		case !slices.Equal(own(c.Seqs), a.Seqs):
			return fmt.Sprintf("check %q cites entries %v, re-derived %v", c.Name, own(c.Seqs), a.Seqs)
		}
	}
	if len(again.Checks) > len(v.Checks) {
		return fmt.Sprintf("the policy gives check %q, which it lacks", again.Checks[len(v.Checks)].Name)
	}
	for i, c := range v.Claims {
		c.Seq = 0
		if i >= len(again.Claims) || !sameJSON(c, again.Claims[i]) {
			return fmt.Sprintf("its claim %s differs from the re-derived one", c.Claim)
		}
	}
	for i, a := range v.Audits {
		a.Seq = 0
		if i >= len(again.Audits) || !sameJSON(a, again.Audits[i]) {
			return fmt.Sprintf("its audit %s differs from the re-derived one", a.Audit)
		}
	}
	for _, f := range []struct {
		what      string
		rec, redo any
	}{
		{"claims", len(v.Claims), len(again.Claims)}, {"audits", len(v.Audits), len(again.Audits)},
		{"model identity", v.ModelIdentity, again.ModelIdentity}, {"run", v.Run, again.Run}, {"manifest", v.Manifest, again.Manifest},
		{"policy digest", v.PolicyDigest, again.PolicyDigest}, {"subjects digest", v.SubjectsDigest, again.SubjectsDigest},
	} {
		if !sameJSON(f.rec, f.redo) {
			return fmt.Sprintf("its %s differs from the re-derived one", f.what)
		}
	}
	return ""
}

// sameJSON tells whether a and b have the same canonical JSON: what the
// ledger would record for each.
func sameJSON(a, b any) bool {
	ja, erra := ledger.CanonicalJSON(a)
	jb, errb := ledger.CanonicalJSON(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}

func passFailWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// Verdicts lists the gate verdicts of l for model identity id (every
// verdict when id is nil), oldest first, as recorded: callers that act on
// one re-derive it with Rederive.
func Verdicts(ctx context.Context, l *ledger.Ledger, id *ledger.Digest) ([]*Verdict, error) {
	var out []*Verdict
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindVerdict}) {
		if err != nil {
			return nil, err
		}
		v := &Verdict{}
		if err := json.Unmarshal(e.Body, v); err != nil {
			return nil, &VerdictError{Seq: e.Seq, Why: fmt.Sprintf("its body does not read as a verdict: %v", err)}
		}
		v.Seq = e.Seq
		if id == nil || (v.ModelIdentity != nil && *v.ModelIdentity == *id) {
			out = append(out, v)
		}
	}
	return out, nil
}

// LatestVerdict returns the last gate verdict of l, of the runs s names
// when it names any, as recorded (nil when there is none): the verdict a
// report rests on and whose evaluations a comparison shows by default.
func LatestVerdict(ctx context.Context, l *ledger.Ledger, s Subjects) (*Verdict, error) {
	all, err := Verdicts(ctx, l, nil)
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if len(s.Runs) == 0 || sameSubjects(s, all[i].Policy.Subjects) {
			return all[i], nil
		}
	}
	return nil, nil
}

// sameSubjects tells whether two namings of runs agree, in any order.
func sameSubjects(a, b Subjects) bool {
	norm := func(rs []LabeledRun) []LabeledRun {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(x, y LabeledRun) int { return cmp.Compare(x.Label, y.Label) })
		return rs
	}
	return slices.Equal(norm(a.Runs), norm(b.Runs)) && slices.Equal(norm(a.Train), norm(b.Train))
}
