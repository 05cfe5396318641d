package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/reports"
)

// KindPublish is the entry kind of a published bundle; its body is a
// Result.
const KindPublish = "publish"

// Options say what to publish, where, and with which key.
type Options struct {
	Run string // a stage run whose output is a checkpoint
	To  string // a directory that does not exist or is empty
	Key string // ECDSA private key PEM (rlgate keygen)
	// Request is the publish.request entry this fulfils; 0: asked for
	// directly (rlgate publish).
	Request int64
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
	Seq           int64         `json:"seq,omitempty"` // the publish entry
}

// Publish writes o.Run's output checkpoint to o.To as a signed bundle and
// records it: the checkpoint's files (checked against the manifest the run
// recorded), that manifest, the report of the passing verdict's runs
// written from the ledger (report/, which rlgate report --check
// re-derives), model.sig (OMS v1.0 over
// all of them) and rlgate.provenance.json. It refuses, with ErrNotGated,
// unless the latest gate verdict for the checkpoint's model identity
// passed, and a target inside the checkpoint or holding it. The bundle is
// built beside o.To and renamed into place, so o.To never holds half a
// bundle; what a killed publish left beside it is deleted first. When a
// publish was killed after the rename, before its entry, o.To holds a
// bundle of o.Run signed with o.Key and no entry records it: for the same
// verdict and a head this ledger holds, its entry is written; for an
// earlier verdict, the bundle is built again and replaces it. Any other
// directory that is not empty is refused (ErrTargetNotEmpty).
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
	ck, err := outputCheckpoint(ctx, l, o.Run)
	if err != nil {
		return nil, err
	}
	if err := checkApart(to, ck.Path); err != nil {
		return nil, err
	}
	gate, err := passingVerdict(ctx, l, o.Run, ck.Digest)
	if err != nil {
		return nil, err
	}
	if err := sweepStaging(to); err != nil {
		return nil, err
	}
	action, res := targetRecord, (*Result)(nil)
	if full {
		if action, res, err = existingBundle(ctx, l, o, to, ck, gate, s); err != nil {
			return nil, err
		}
	}
	if res == nil {
		if res, err = stageAndPlace(ctx, l, o, to, ck, gate, s, action == targetRebuild); err != nil {
			return nil, err
		}
	}
	es, err := l.Append(ctx, ledger.Record{Kind: KindPublish, Run: o.Run, Body: res})
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
	if diff := cmp.Diff(want, *got); diff != "" {
		return nil, fmt.Errorf("%w: %s is not what run %s recorded (-recorded +now):\n%s", ErrCheckpointChanged, ck.Path, o.Run, diff)
	}
	if err := os.WriteFile(filepath.Join(tmp, ManifestFile), recorded, 0o644); err != nil {
		return nil, err
	}
	p := &ProvenancePredicate{Run: o.Run, ModelIdentity: ck.Digest, Manifest: ManifestFile, ManifestDigest: *ck.Manifest, Gate: *gate, Report: ReportDir}
	if p.Stages, err = lineage(ctx, l, o.Run); err != nil {
		return nil, err
	}
	if p.LedgerHead, err = l.Head(ctx); err != nil {
		return nil, err
	}
	// The report states the verdict's runs as of the head the provenance
	// names, so a reviewer's report --check re-derives it from that head.
	ro := reports.Options{Subjects: gate.Verdict.Policy.Subjects, Head: &p.LedgerHead}
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
	return &Result{Run: o.Run, To: to, ModelIdentity: ck.Digest, RootDigest: root, Files: len(rs), KeyHint: s.Hint,
		Verdict: gate.Seq, Head: p.LedgerHead, Request: o.Request}, nil
}

// copyInto copies a checkpoint (a directory, or one .safetensors file)
// into dir.
func copyInto(dir, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return &ledger.Error{Op: "copy checkpoint", Path: src, Err: err, Hint: "publish from the machine that holds the run's output"}
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
		if a.Role == "output" && a.Kind == "checkpoint" && a.Manifest != nil {
			if !filepath.IsAbs(a.Path) {
				dir, err := runDir(ctx, l, run)
				if err != nil {
					return nil, err
				}
				a.Path = filepath.Join(dir, a.Path)
			}
			return a, nil
		}
	}
	return nil, &ledger.Error{Op: "publish run", Path: run, Err: ErrNoCheckpoint, Hint: "publish a training stage run (rlgate run --out NAME=DIR) whose output holds safetensors"}
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

// passingVerdict returns the latest gate verdict for model identity id,
// and ErrNotGated when there is none or it failed: a later failing gate
// withdraws an earlier pass.
func passingVerdict(ctx context.Context, l *ledger.Ledger, run string, id ledger.Digest) (*GateClaim, error) {
	var last *GateClaim
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: audit.KindVerdict}) {
		if err != nil {
			return nil, err
		}
		var v audit.Verdict
		if err := json.Unmarshal(e.Body, &v); err != nil {
			return nil, fmt.Errorf("gate verdict entry %d: %w", e.Seq, err)
		}
		if v.ModelIdentity != nil && *v.ModelIdentity == id {
			v.Seq = e.Seq
			last = &GateClaim{Seq: e.Seq, Hash: e.Hash, Verdict: v}
		}
	}
	switch {
	case last == nil:
		return nil, fmt.Errorf("publish run %s: %w: no gate verdict is for model %s, its output. Try: rlgate gate --runs ... --train rl=%s", run, ErrNotGated, id, run)
	case !last.Verdict.OK:
		return nil, fmt.Errorf("publish run %s: %w: the latest gate verdict for model %s %s; nothing was published. Try: fix what the gate found and run rlgate gate again",
			run, ErrNotGated, id, last.Verdict.Summary())
	}
	return last, nil
}
