package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Files rlgate adds beside the checkpoint in a published directory.
const (
	// ProvenanceFile is a DSSE envelope holding an in-toto Statement v1
	// whose subject is the OMS root digest and whose predicate is a
	// ProvenancePredicate.
	ProvenanceFile = "rlgate.provenance.json"
	// ManifestFile is the checkpoint manifest the training run recorded,
	// byte for byte as the ledger blob holds it.
	ManifestFile = "rlgate.manifest.json"
	// ReportDir is where the bundle's report, written from the ledger, goes.
	ReportDir = "report"
)

// ProvenancePredicateType names the predicate of rlgate.provenance.json;
// docs/PUBLISH.md describes it.
const ProvenancePredicateType = "https://github.com/rlgate/rlgate/blob/main/docs/PUBLISH.md#provenance-v1"

// ProvenancePredicate is what a published bundle claims about where its
// weights came from: the training run and its upstream stages with every
// input by digest, the passing gate verdict for its model identity with
// all its checks, and the ledger head when it was published.
type ProvenancePredicate struct {
	Run            string        `json:"run"`
	ModelIdentity  ledger.Digest `json:"model_identity"`
	Manifest       string        `json:"manifest"`        // ManifestFile
	ManifestDigest ledger.Digest `json:"manifest_digest"` // BLAKE3 of it: the ledger blob's name
	Report         string        `json:"report,omitempty"`
	Stages         []Stage       `json:"stages"`
	Gate           GateClaim     `json:"gate"`
	LedgerHead     ledger.Head   `json:"ledger_head"`
	// Policy states the claims and audits the verdict's policy held and,
	// for a custom policy, how it differs from paper-grade.
	Policy string `json:"policy"`
	// Verdicts are every gate verdict for the model, failures first.
	Verdicts []VerdictRef `json:"verdicts"`
	// AfterFailed is the publisher's reason for publishing although an
	// earlier verdict for the model failed.
	AfterFailed string `json:"after_failed_verdict,omitempty"`
}

// GateClaim is the gate.verdict entry that let the model through.
type GateClaim struct {
	Seq     int64         `json:"seq"`
	Hash    ledger.Digest `json:"hash"` // the entry's hash, which covers the verdict
	Verdict audit.Verdict `json:"verdict"`
	// History is every verdict for the model, failures first.
	History []VerdictRef `json:"-"`
}

// VerdictRef is one gate verdict for a published model.
type VerdictRef struct {
	Seq    int64  `json:"seq"`
	OK     bool   `json:"ok"`
	Failed int    `json:"failed"`
	Checks int    `json:"checks"`
	Policy string `json:"policy"`
}

// Stage is one stage run of the published model's lineage.
type Stage struct {
	Run      string             `json:"run"`
	Stage    string             `json:"stage"`
	Status   records.Status     `json:"status"`
	StartSeq int64              `json:"start_seq"`
	EndSeq   int64              `json:"end_seq,omitempty"`
	Code     runner.CodeVersion `json:"code"`
	Params   map[string]string  `json:"params,omitempty"`
	Inputs   []StageArtifact    `json:"inputs"`
	Outputs  []StageArtifact    `json:"outputs"`
}

// StageArtifact is an input, config or output of a stage, by digest.
type StageArtifact struct {
	Name       string               `json:"name"`
	Kind       records.ArtifactKind `json:"kind"`
	Digest     ledger.Digest        `json:"digest"`
	Manifest   *ledger.Digest       `json:"manifest,omitempty"`
	ProducedBy string               `json:"produced_by,omitempty"` // the run whose output it was
}

// runArtifact is the body of an artifact entry a stage run wrote.
type runArtifact struct {
	ledger.Artifact
	Path       string          `json:"path"`
	ProducedBy *runner.Lineage `json:"produced_by,omitempty"`
}

// runArtifacts reads the artifact entries of run.
func runArtifacts(ctx context.Context, l *ledger.Ledger, run string) ([]runArtifact, error) {
	var out []runArtifact
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindArtifact, Run: run}) {
		if err != nil {
			return nil, err
		}
		var a runArtifact
		if err := json.Unmarshal(e.Body, &a); err != nil {
			return nil, fmt.Errorf("run %s: entry %d: %w", run, e.Seq, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// lineage lists run and every stage run upstream of it (through inputs
// that an earlier run wrote as output), run first.
func lineage(ctx context.Context, l *ledger.Ledger, run string) ([]Stage, error) {
	var out []Stage
	seen := map[string]bool{run: true}
	for queue := []string{run}; len(queue) > 0; queue = queue[1:] {
		r, err := l.RunStatus(ctx, queue[0])
		if err != nil {
			return nil, err
		}
		e, err := l.EntryBySeq(ctx, r.StartedSeq)
		if err != nil {
			return nil, err
		}
		var start runner.StartBody
		if err := json.Unmarshal(e.Body, &start); err != nil {
			return nil, fmt.Errorf("run %s: entry %d: %w", r.Run, e.Seq, err)
		}
		s := Stage{Run: r.Run, Stage: r.Stage, Status: r.Status, StartSeq: r.StartedSeq, Code: start.Code, Params: start.Params,
			Inputs: []StageArtifact{}, Outputs: []StageArtifact{}}
		if r.EndedSeq != nil {
			s.EndSeq = *r.EndedSeq
		}
		arts, err := runArtifacts(ctx, l, r.Run)
		if err != nil {
			return nil, err
		}
		for _, a := range arts {
			sa := StageArtifact{Name: a.Name, Kind: a.Kind, Digest: a.Digest, Manifest: a.Manifest}
			if a.ProducedBy != nil {
				sa.ProducedBy = a.ProducedBy.Run
				if !seen[sa.ProducedBy] {
					seen[sa.ProducedBy] = true
					queue = append(queue, sa.ProducedBy)
				}
			}
			if a.Role == records.RoleOutput {
				s.Outputs = append(s.Outputs, sa)
			} else {
				s.Inputs = append(s.Inputs, sa)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// signProvenance writes the provenance statement about the bundle name
// whose OMS root digest is root, signed by s, as a DSSE envelope.
func signProvenance(ctx context.Context, name, root string, p *ProvenancePredicate, s *Signer) ([]byte, error) {
	payload, err := statementJSON(name, root, ProvenancePredicateType, p)
	if err != nil {
		return nil, err
	}
	env, err := signStatement(ctx, s, payload)
	if err != nil {
		return nil, fmt.Errorf("sign provenance: %w", err)
	}
	out, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Provenance check names, as VerifyBundle reports them.
const (
	CheckProvenanceSignature = "provenance: signature"
	CheckProvenanceSubject   = "provenance: subject"
	CheckProvenanceModel     = "provenance: model identity"
	CheckProvenanceGate      = "provenance: gate"
)

// provenance checks dir's rlgate.provenance.json, when there is one: its
// signature by the key that signed the OMS bundle, its subject (the OMS
// root digest), the manifest and weights it names, and the gate verdict
// it claims.
func (v *Verification) provenance(ctx context.Context, dir string, ver *verifier, oms *Statement) error {
	raw, err := untrusted.ReadFileIn(dir, ProvenanceFile, untrusted.ProvenanceLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		v.add(CheckProvenanceSignature, false, "%v", err)
		return nil
	}
	var env dsse.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		v.add(CheckProvenanceSignature, false, "%s is not a DSSE envelope: %v", ProvenanceFile, err)
		return nil
	}
	if ver == nil {
		v.add(CheckProvenanceSignature, false, "no trusted key to check %s with", ProvenanceFile)
		return nil
	}
	payload, err := verifyEnvelope(ctx, ver, &env)
	if err != nil {
		v.add(CheckProvenanceSignature, false, "the DSSE signature of %s does not verify with the %s: %v", ProvenanceFile, v.Method, err)
		return nil
	}
	st, err := parseStatement(payload)
	var p ProvenancePredicate
	if err == nil && st.PredicateType != ProvenancePredicateType {
		err = fmt.Errorf("predicate type %q, want %q", st.PredicateType, ProvenancePredicateType)
	}
	if err == nil {
		err = json.Unmarshal(st.Predicate, &p)
	}
	if err != nil {
		v.add(CheckProvenanceSignature, false, "%s: %v", ProvenanceFile, err)
		return nil
	}
	v.add(CheckProvenanceSignature, true, "%s is signed by the same %s", ProvenanceFile, v.Method)
	v.Claims = &p

	if got, want := st.Subject[0].Digest["sha256"], oms.Subject[0].Digest["sha256"]; len(st.Subject) != 1 || got != want {
		v.add(CheckProvenanceSubject, false, "its subject is sha256:%s, not the OMS root digest sha256:%s", got, want)
	} else {
		v.add(CheckProvenanceSubject, true, "its subject is the OMS root digest sha256:%s", got)
	}

	if err := v.modelIdentity(ctx, dir, &p); err != nil {
		return err
	}

	g := p.Gate.Verdict
	switch {
	case !g.OK:
		v.add(CheckProvenanceGate, false, "it names gate verdict entry %d, which failed %d checks", p.Gate.Seq, g.Failed)
	case g.ModelIdentity == nil || *g.ModelIdentity != p.ModelIdentity:
		v.add(CheckProvenanceGate, false, "gate verdict entry %d is for model %v, not %s", p.Gate.Seq, g.ModelIdentity, p.ModelIdentity)
	default:
		v.add(CheckProvenanceGate, true, "the signer states gate verdict entry %d (policy %s) passed all %d checks for model %s", p.Gate.Seq, g.Policy.Name, len(g.Checks), p.ModelIdentity)
	}
	return nil
}

// modelIdentity checks that the manifest in the bundle is the one the
// provenance names and that the weights in dir have its model identity.
func (v *Verification) modelIdentity(ctx context.Context, dir string, p *ProvenancePredicate) error {
	raw, err := untrusted.ReadFileIn(dir, ManifestFile, untrusted.ManifestLimit)
	if err != nil {
		v.add(CheckProvenanceModel, false, "read %s: %v", ManifestFile, err)
		return nil
	}
	if d := ledger.Sum(raw); d != p.ManifestDigest {
		v.add(CheckProvenanceModel, false, "%s is %s, the provenance names %s", ManifestFile, d, p.ManifestDigest)
		return nil
	}
	m, err := manifests.BuildCheckpointManifest(ctx, dir)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.add(CheckProvenanceModel, false, "hash the weights: %v", err)
		return nil
	}
	if m.Identity != p.ModelIdentity {
		v.add(CheckProvenanceModel, false, "the weights are model %s, the provenance names %s", m.Identity, p.ModelIdentity)
		return nil
	}
	v.add(CheckProvenanceModel, true, "the weights are model %s, as %s and the provenance say", m.Identity, ManifestFile)
	return nil
}

// Ledger check names, as CheckLedger reports them.
const (
	CheckLedgerHead    = "ledger: head"
	CheckLedgerVerdict = "ledger: verdict"
	// CheckLedgerRederived: the verdict, re-derived from the ledger
	// (audit.Rederive), is the one the provenance states, lets this run
	// and manifest through, and every verdict for the model is listed.
	CheckLedgerRederived = "ledger: verdict re-derived"
	CheckLedgerPublish   = "ledger: publish"
)

// CheckLedger holds what the bundle's provenance claims against l: l is
// the ledger it names and still holds the head it names (so l extends the
// ledger the bundle was published from), the gate verdict entry it names
// has the hash it names (which covers the verdict), and l recorded the
// publish of this root digest. `rlgate verify` checks the chain between.
func (v *Verification) CheckLedger(ctx context.Context, l *ledger.Ledger) error {
	p := v.Claims
	if p == nil {
		v.add(CheckLedgerHead, false, "the bundle has no verified %s, so it claims nothing to check against the ledger", ProvenanceFile)
		return nil
	}
	l, err := l.Checked(ctx, 0)
	if err != nil {
		return err
	}
	defer l.Close()
	entryIs := func(check string, seq int64, hash ledger.Digest, what string) error {
		e, err := l.EntryBySeq(ctx, seq)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			v.add(check, false, "the ledger has no entry %d, the %s the bundle names", seq, what)
		case err != nil:
			return err
		case e.Hash != hash:
			v.add(check, false, "entry %d is %s, the bundle names %s as its %s", seq, e.Hash, hash, what)
		default:
			v.add(check, true, "entry %d is the %s the bundle names (%s)", seq, what, hash)
		}
		return nil
	}
	if l.ID() != p.LedgerHead.LedgerID {
		v.add(CheckLedgerHead, false, "the bundle names ledger %s; this is ledger %s", p.LedgerHead.LedgerID, l.ID())
	} else if err := entryIs(CheckLedgerHead, p.LedgerHead.Seq, p.LedgerHead.Hash, "ledger head"); err != nil {
		return err
	}
	if err := entryIs(CheckLedgerVerdict, p.Gate.Seq, p.Gate.Hash, "gate verdict"); err != nil {
		return err
	}
	if err := v.checkRederived(ctx, l, p); err != nil {
		return err
	}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindPublish, AfterSeq: p.LedgerHead.Seq}) {
		if err != nil {
			return err
		}
		var r Result
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return fmt.Errorf("publish entry %d: %w", e.Seq, err)
		}
		if r.RootDigest == v.RootDigest && v.RootDigest != "" {
			v.add(CheckLedgerPublish, true, "publish entry %d recorded this bundle (run %s to %s)", e.Seq, r.Run, r.To)
			return nil
		}
	}
	v.add(CheckLedgerPublish, false, "no publish entry after the head records root digest sha256:%s", v.RootDigest)
	return nil
}

// checkRederived re-derives the verdict the provenance names and checks it
// is the one the bundle states: the signer's statement of a verdict is
// not taken for the verdict itself.
func (v *Verification) checkRederived(ctx context.Context, l *ledger.Ledger, p *ProvenancePredicate) error {
	if h, err := l.Head(ctx); err != nil || h.Seq < p.Gate.Seq || l.ID() != p.LedgerHead.LedgerID {
		v.add(CheckLedgerRederived, false, "this ledger does not hold gate verdict entry %d of ledger %s, so it cannot re-derive it", p.Gate.Seq, p.LedgerHead.LedgerID)
		return nil
	}
	rv, err := audit.Rederive(ctx, l, p.Gate.Seq)
	var ve *audit.VerdictError
	if errors.As(err, &ve) {
		v.add(CheckLedgerRederived, false, "%v", err)
		return nil
	}
	if err != nil {
		return err
	}
	stated := p.Gate.Verdict
	stated.Seq = rv.Seq
	want, err := ledger.CanonicalJSON(rv)
	if err != nil {
		return err
	}
	got, err := ledger.CanonicalJSON(stated)
	if err != nil {
		return err
	}
	all, err := audit.Verdicts(ctx, l, rv.ModelIdentity)
	if err != nil {
		return err
	}
	listed := map[int64]bool{}
	for _, r := range p.Verdicts {
		listed[r.Seq] = true
	}
	var missing []string
	for _, w := range all {
		if w.Seq <= p.LedgerHead.Seq && !listed[w.Seq] {
			missing = append(missing, fmt.Sprint(w.Seq))
		}
	}
	switch {
	case string(want) != string(got):
		v.add(CheckLedgerRederived, false, "gate verdict entry %d re-derives, and is not the verdict the bundle states", rv.Seq)
	case !rv.OK:
		v.add(CheckLedgerRederived, false, "gate verdict entry %d re-derives as failed", rv.Seq)
	case rv.Run != p.Run || rv.Manifest == nil || *rv.Manifest != p.ManifestDigest:
		v.add(CheckLedgerRederived, false, "gate verdict entry %d lets through run %s and another manifest, not run %s's %s", rv.Seq, rv.Run, p.Run, p.ManifestDigest)
	case len(missing) > 0:
		v.add(CheckLedgerRederived, false, "the bundle leaves out gate verdicts %s for model %s", strings.Join(missing, ", "), p.ModelIdentity)
	default:
		v.add(CheckLedgerRederived, true, "gate verdict entry %d re-derived from the ledger check for check (%d checks, passed); the bundle lists all %d verdicts for the model",
			rv.Seq, len(rv.Checks), len(p.Verdicts))
	}
	return nil
}
