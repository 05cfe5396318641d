package publish

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/stages/dataset"
)

func init() {
	records.Register[Result](records.KindPublish, 1)
	records.Register[Request](records.KindRequest, 1)
}

// Options say what to publish, where, and with which key.
type Options struct {
	Run string // a stage run whose output is a checkpoint
	To  string // a directory that does not exist or is empty
	Key string // ECDSA private key PEM (rlgate keygen)
	// Request is the publish.request entry this fulfils; 0: asked for
	// directly (rlgate publish).
	Request int64
	// AfterFailed is the reason the publisher gives for publishing a
	// model an earlier gate verdict failed; without one such a publish
	// is refused. It is recorded and heads the bundle's provenance.
	AfterFailed string
}

// Result is what Publish wrote, recorded as the publish entry. Its JSON
// form is a stable contract: fields are only ever added.
type Result struct {
	Run           string        `json:"run"`
	To            string        `json:"to"`
	ModelIdentity ledger.Digest `json:"model_identity"`
	RootDigest    string        `json:"root_digest"` // OMS subject, hex SHA-256
	Files         int           `json:"files"`       // signed by model.sig
	KeyHint       string        `json:"key_hint"`
	Verdict       int64         `json:"verdict_seq"`
	Head          ledger.Head   `json:"head"` // the ledger head the provenance names
	Request       int64         `json:"request_seq,omitempty"`
	// AfterFailed is Options.AfterFailed, and FailedVerdicts the earlier
	// failed verdicts for the model it was given for.
	AfterFailed    string  `json:"after_failed_verdict,omitempty"`
	FailedVerdicts []int64 `json:"failed_verdicts,omitempty"`
	Seq            int64   `json:"seq,omitempty"` // the publish entry
}

// Publish writes o.Run's output checkpoint to o.To as a signed bundle and
// records it: the checkpoint's files (checked against the manifest the run
// recorded), that manifest, the report of the passing verdict's runs
// written from the ledger (report/, which rlgate report --check
// re-derives), model.sig (OMS v1.0 over
// all of them) and rlgate.provenance.json. Everything it reads comes from
// a checked view of the ledger (ledger.Checked). It refuses, with
// ErrNotGated, unless the latest gate verdict for the checkpoint's model
// identity re-derives (audit.Rederive) and passed, lets through exactly
// this run (its rl training run, which ended ok, with this output
// manifest), and no earlier verdict for the model failed (unless
// o.AfterFailed gives a reason); it refuses a target inside the
// checkpoint or holding it. The bundle is built beside o.To and renamed
// into place, so o.To never holds half a bundle; what a killed publish
// left beside it is deleted first. When a publish was killed after the
// rename, before its entry, o.To holds a bundle of o.Run signed with o.Key
// and no entry records it: for the same verdict and a head this ledger
// holds, its entry is written; for an earlier verdict, the bundle is built
// again and replaces it. Any other directory that is not empty is refused
// (ErrTargetNotEmpty).
func Publish(ctx context.Context, l *ledger.Ledger, o Options) (*Result, error) {
	to, err := CheckTarget(o.To)
	full := errors.Is(err, ErrTargetNotEmpty)
	if full {
		to, err = filepath.Abs(o.To)
	}
	if err != nil {
		return nil, err
	}
	s, err := LoadSigner(o.Key)
	if err != nil {
		return nil, err
	}
	r, err := l.Checked(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ck, err := outputCheckpoint(ctx, r, o.Run)
	if err != nil {
		return nil, err
	}
	if err := checkApart(to, ck.Path); err != nil {
		return nil, err
	}
	gate, err := gatedVerdict(ctx, r, o, ck)
	if err != nil {
		return nil, err
	}
	if err := sweepStaging(to); err != nil {
		return nil, err
	}
	action, res := targetRecord, (*Result)(nil)
	if full {
		if action, res, err = existingBundle(ctx, r, o, to, ck, gate, s); err != nil {
			return nil, err
		}
	}
	if res == nil {
		if res, err = stageAndPlace(ctx, r, o, to, ck, gate, s, action == targetRebuild); err != nil {
			return nil, err
		}
	}
	es, err := l.Append(ctx, ledger.Record{Kind: records.KindPublish, Run: o.Run, Body: res})
	if err != nil {
		return nil, fmt.Errorf("record publish (the bundle is in %s): %w", to, err)
	}
	res.Seq = es[0].Seq
	return res, nil
}

// stageAndPlace builds the bundle in a locked staging directory beside
// to and renames it into place, replacing the earlier bundle there when
// rebuild is set.
func stageAndPlace(ctx context.Context, l *ledger.Ledger, o Options, to string, ck *runArtifact, gate *GateClaim, s *Signer, rebuild bool) (*Result, error) {
	tmp, lock, err := newStaging(to)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	res, err := build(ctx, l, o, tmp, to, ck, gate, s)
	crashPoint("staged")
	switch {
	case err != nil:
	case rebuild:
		err = replace(tmp, to)
	default:
		err = place(tmp, to)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	crashPoint("placed")
	return res, nil
}

// CheckTarget returns the absolute path of a directory to publish to,
// refusing one that exists and is not empty.
func CheckTarget(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ents, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("publish to %s: %w", abs, err)
	case len(ents) > 0:
		return "", &ledger.Error{Op: "publish to", Path: abs, Err: ErrTargetNotEmpty, Hint: "name a new or empty directory"}
	}
	return abs, nil
}

// build writes the bundle into tmp.
func build(ctx context.Context, l *ledger.Ledger, o Options, tmp, to string, ck *runArtifact, gate *GateClaim, s *Signer) (*Result, error) {
	recorded, err := l.ReadBlob(*ck.Manifest)
	if err != nil {
		return nil, err
	}
	var want manifests.CheckpointManifest
	if err := json.Unmarshal(recorded, &want); err != nil {
		return nil, fmt.Errorf("checkpoint manifest %s: %w", ck.Manifest, err)
	}
	own := []string{SignatureFile, ProvenanceFile, ManifestFile, ReportDir}
	for _, f := range want.Files {
		if ignored(f.Path, own) {
			return nil, fmt.Errorf("publish: the checkpoint holds %s, a name the bundle gives its own files", f.Path)
		}
	}
	if err := copyInto(tmp, ck.Path); err != nil {
		return nil, err
	}
	got, err := manifests.BuildCheckpointManifest(ctx, tmp)
	if err != nil {
		return nil, err
	}
	if d := manifestDifference(&want, got); d != "" {
		return nil, fmt.Errorf("%w: %s is not what run %s recorded: %s", ErrCheckpointChanged, ck.Path, o.Run, d)
	}
	if err := os.WriteFile(filepath.Join(tmp, ManifestFile), recorded, 0o644); err != nil {
		return nil, err
	}
	p := &ProvenancePredicate{Run: o.Run, ModelIdentity: ck.Digest, Manifest: ManifestFile, ManifestDigest: *ck.Manifest, Gate: *gate, Report: ReportDir,
		Policy: reports.PolicyStatement(gate.Verdict.Policy), Verdicts: gate.History, AfterFailed: o.AfterFailed}
	if p.Stages, err = lineage(ctx, l, o.Run); err != nil {
		return nil, err
	}
	if p.LedgerHead, err = l.Head(ctx); err != nil {
		return nil, err
	}
	// The report states the verdict's runs as of the head the provenance
	// names, so a reviewer's report --check re-derives it from that head.
	ro := reports.Options{Subjects: gate.Verdict.Policy.Subjects, Head: &p.LedgerHead, Rederived: &gate.Verdict}
	if _, err := reports.Write(ctx, l, ro, filepath.Join(tmp, ReportDir)); err != nil {
		return nil, fmt.Errorf("write the bundle's report: %w", err)
	}
	name := filepath.Base(to)
	sig, rs, root, err := SignModel(ctx, tmp, name, []string{ProvenanceFile}, s)
	if err != nil {
		return nil, err
	}
	prov, err := signProvenance(ctx, name, root, p, s)
	if err != nil {
		return nil, err
	}
	for f, b := range map[string][]byte{SignatureFile: sig, ProvenanceFile: prov} {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return nil, err
		}
	}
	res := &Result{Run: o.Run, To: to, ModelIdentity: ck.Digest, RootDigest: root, Files: len(rs), KeyHint: s.Hint,
		Verdict: gate.Seq, Head: p.LedgerHead, Request: o.Request}
	res.afterFailed(o, gate)
	return res, nil
}

// copyInto copies a checkpoint (a directory, or one .safetensors file)
// into dir.
func copyInto(dir, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return &ledger.Error{Op: "copy checkpoint", Path: src, Err: err, Hint: "publish from the machine that holds the run's output, or give rlgate --data-root DIR holding a copy of it"}
	}
	if fi.IsDir() {
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			return fmt.Errorf("copy checkpoint %s: %w", src, err)
		}
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy checkpoint: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(dir, filepath.Base(src)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("copy checkpoint: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy checkpoint %s: %w", src, err)
	}
	return out.Close()
}

// place moves the finished bundle tmp to to, which is absent or empty.
func place(tmp, to string) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish to %s: %w", to, err)
	}
	if err := os.Rename(tmp, to); err != nil {
		return fmt.Errorf("publish to %s: %w", to, err)
	}
	return nil
}

// outputCheckpoint returns run's output checkpoint artifact, with its
// path made absolute against the run's working directory.
func outputCheckpoint(ctx context.Context, l *ledger.Ledger, run string) (*runArtifact, error) {
	if _, err := l.RunStatus(ctx, run); err != nil {
		return nil, &ledger.Error{Op: "publish run", Path: run, Err: err, Hint: "rlgate runs lists the runs"}
	}
	arts, err := runArtifacts(ctx, l, run)
	if err != nil {
		return nil, err
	}
	for i := range arts {
		a := &arts[i]
		if a.Role == records.RoleOutput && a.Kind == records.ArtifactCheckpoint && a.Manifest != nil {
			if !filepath.IsAbs(a.Path) {
				dir, err := runDir(ctx, l, run)
				if err != nil {
					return nil, err
				}
				a.Path = filepath.Join(dir, a.Path)
			}
			return a, locateCheckpoint(ctx, l, a)
		}
	}
	return nil, &ledger.Error{Op: "publish run", Path: run, Err: ErrNoCheckpoint, Hint: "publish a training stage run (rlgate run --out NAME=DIR) whose output holds safetensors"}
}

// locateCheckpoint points a at where its checkpoint lies now: the first
// directory under a --data-root, by the tails of the recorded path, or
// the recorded path itself, holding every file its recorded manifest
// lists (dataset.FindDir), so a run trained on another machine can be
// published from a copy. The bytes are checked against the manifest as
// they are copied.
func locateCheckpoint(ctx context.Context, l *ledger.Ledger, a *runArtifact) error {
	raw, err := l.ReadBlob(*a.Manifest)
	if err != nil {
		return err
	}
	var m manifests.CheckpointManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("checkpoint manifest %s: %w", a.Manifest, err)
	}
	var rels []string
	for _, f := range m.Files {
		rels = append(rels, f.Path)
	}
	if len(rels) > 0 {
		a.Path = dataset.FindDir(ctx, a.Path, rels)
	}
	return nil
}

// runDir is the working directory run's stage ran in.
func runDir(ctx context.Context, l *ledger.Ledger, run string) (string, error) {
	r, err := l.RunStatus(ctx, run)
	if err != nil {
		return "", err
	}
	e, err := l.EntryBySeq(ctx, r.StartedSeq)
	if err != nil {
		return "", err
	}
	var start struct {
		Dir string `json:"dir"`
	}
	if err := json.Unmarshal(e.Body, &start); err != nil {
		return "", fmt.Errorf("run %s: entry %d: %w", run, e.Seq, err)
	}
	return start.Dir, nil
}

// gatedVerdict returns the gate verdict that lets o.Run's checkpoint ck
// through, refusing with ErrNotGated (or audit.ErrVerdictRefused) unless
// the latest verdict for its model identity re-derives and passed, names
// o.Run as its rl training run, that run ended ok and its output manifest
// is the one the verdict bound, and no earlier verdict for the model
// failed unless o.AfterFailed says why to publish anyway. Its History
// lists every verdict for the model, failures first.
func gatedVerdict(ctx context.Context, r *ledger.Ledger, o Options, ck *runArtifact) (*GateClaim, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("publish run %s: %w: %s; nothing was published", o.Run, ErrNotGated, fmt.Sprintf(format, args...))
	}
	all, err := audit.Verdicts(ctx, r, &ck.Digest)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("publish run %s: %w: no gate verdict is for model %s, its output. Try: rlgate gate --runs ... --train rl=%s", o.Run, ErrNotGated, ck.Digest, o.Run)
	}
	v, err := audit.Rederive(ctx, r, all[len(all)-1].Seq)
	if err != nil {
		return nil, err
	}
	switch {
	case !v.OK:
		return nil, refuse("the latest gate verdict for model %s %s. Try: fix what the gate found and run rlgate gate again", ck.Digest, v.Summary())
	case v.Run == "":
		return nil, refuse("gate verdict entry %d names no rl training run, so it lets no run's files through. Try: rlgate gate with --train rl=%s", v.Seq, o.Run)
	case v.Run != o.Run:
		return nil, refuse("gate verdict entry %d lets through run %s, not %s (the same weights do not make the same run). Try: rlgate publish --run %s", v.Seq, v.Run, o.Run, v.Run)
	case v.Manifest == nil || ck.Manifest == nil || *v.Manifest != *ck.Manifest:
		return nil, refuse("run %s's output manifest is not the one gate verdict entry %d bound", o.Run, v.Seq)
	}
	run, err := r.RunStatus(ctx, o.Run)
	if err != nil {
		return nil, err
	}
	if run.Status != records.StatusOK {
		return nil, refuse("run %s ended %s, not ok", o.Run, run.Status)
	}
	claim := &GateClaim{Seq: v.Seq, Verdict: *v}
	e, err := r.EntryBySeq(ctx, v.Seq)
	if err != nil {
		return nil, err
	}
	claim.Hash = e.Hash
	var failed []string
	for _, w := range all {
		claim.History = append(claim.History, VerdictRef{Seq: w.Seq, OK: w.OK, Failed: w.Failed, Checks: len(w.Checks), Policy: reports.PolicyStatement(w.Policy)})
		if !w.OK {
			failed = append(failed, fmt.Sprint(w.Seq))
		}
	}
	slices.SortStableFunc(claim.History, func(a, b VerdictRef) int { return cmp.Compare(boolRank(a.OK), boolRank(b.OK)) })
	if len(failed) > 0 && strings.TrimSpace(o.AfterFailed) == "" {
		return nil, refuse("earlier gate verdicts for model %s failed (entries %s). Try: publish it anyway with --after-failed-verdict \"REASON\", which is recorded and heads the bundle",
			ck.Digest, strings.Join(failed, ", "))
	}
	return claim, nil
}

// afterFailed records the publisher's reason for publishing after failed
// verdicts, and those verdicts.
func (r *Result) afterFailed(o Options, gate *GateClaim) {
	if o.AfterFailed == "" {
		return
	}
	r.AfterFailed = o.AfterFailed
	for _, h := range gate.History {
		if !h.OK {
			r.FailedVerdicts = append(r.FailedVerdicts, h.Seq)
		}
	}
}

// boolRank orders failures (false) before passes.
func boolRank(ok bool) int {
	if ok {
		return 1
	}
	return 0
}

// manifestDifference names, in one line, the first way a checkpoint's
// manifest now differs from the recorded one; "" when it does not.
func manifestDifference(want, got *manifests.CheckpointManifest) string {
	files := map[string]manifests.CheckpointFile{}
	for _, f := range got.Files {
		files[f.Path] = f
	}
	for _, f := range want.Files {
		g, ok := files[f.Path]
		switch {
		case !ok:
			return fmt.Sprintf("file %s is missing", f.Path)
		case g.Digest != f.Digest || g.Size != f.Size:
			return fmt.Sprintf("file %s changed (recorded %s, %d bytes; now %s, %d bytes)", f.Path, f.Digest, f.Size, g.Digest, g.Size)
		}
		delete(files, f.Path)
	}
	for _, f := range got.Files {
		if _, extra := files[f.Path]; extra {
			return fmt.Sprintf("file %s was not recorded", f.Path)
		}
	}
	tensors := map[string]manifests.CheckpointTensor{}
	for _, t := range got.Tensors {
		tensors[t.Name] = t
	}
	for _, t := range want.Tensors {
		if g, ok := tensors[t.Name]; !ok || g.Digest != t.Digest {
			return fmt.Sprintf("tensor %s changed", t.Name)
		}
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("its manifest (model identity %s) is not the recorded one (%s)", got.Identity, want.Identity)
	}
	return ""
}
