package publish

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// checkApart refuses a target inside the checkpoint it would copy (the
// copy would copy itself, level after level) and a checkpoint inside the
// target, comparing the paths with symbolic links resolved.
func checkApart(to, src string) error {
	t, s := resolved(to), resolved(src)
	inside := func(p, dir string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	switch {
	case inside(t, s):
		return &ledger.Error{Op: "publish to", Path: to, Err: fmt.Errorf("is inside the checkpoint it would copy, %s", src), Hint: "name a directory outside the checkpoint"}
	case inside(s, t):
		return &ledger.Error{Op: "publish to", Path: to, Err: fmt.Errorf("holds the checkpoint it would copy, %s", src), Hint: "name a directory outside the checkpoint"}
	}
	return nil
}

// resolved is p with symbolic links resolved in the longest part of it
// that exists.
func resolved(p string) string {
	rest := ""
	for dir := filepath.Clean(p); ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(dir) == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// An existing bundle at the target is what a publish killed after
// renaming it into place, before writing its entry, left. What Publish
// does with a target that is not empty:
const (
	targetRefused = iota // not a bundle of this run signed with this key, or already recorded: refused
	targetRecord         // this run's bundle for the verdict and head now: its entry is written
	targetRebuild        // this run's bundle, signed with this key, for an earlier verdict: replaced
)

// existingBundle decides what to do with the bundle at the non-empty
// target to, for publishing run's checkpoint ck under verdict gate with
// signer s. For targetRecord it returns the Result the entry records.
func existingBundle(ctx context.Context, l *ledger.Ledger, o Options, to string, ck *runArtifact, gate *GateClaim, s *Signer) (int, *Result, error) {
	refuse := func(why string) (int, *Result, error) {
		return targetRefused, nil, &ledger.Error{Op: "publish to", Path: to, Err: fmt.Errorf("%w: %s", ErrTargetNotEmpty, why), Hint: "name a new or empty directory"}
	}
	pub, ok := s.sv.Public().(*ecdsa.PublicKey)
	if !ok {
		return refuse("the signing key is not ECDSA")
	}
	v, err := VerifyBundle(ctx, to, VerifyOptions{signingKey: pub})
	if err != nil {
		return targetRefused, nil, err
	}
	c := v.Claims
	if !v.OK || c == nil || c.Run != o.Run || c.ModelIdentity != ck.Digest {
		return refuse("it holds no bundle of run " + o.Run + " that verifies with key " + s.Hint)
	}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindPublish, Run: o.Run}) {
		if err != nil {
			return targetRefused, nil, err
		}
		var r Result
		if json.Unmarshal(e.Body, &r) == nil && r.To == to && r.RootDigest == v.RootDigest {
			return refuse(fmt.Sprintf("run %s was published there already (entry %d)", o.Run, e.Seq))
		}
	}
	if c.Gate.Seq != gate.Seq || c.Gate.Hash != gate.Hash || c.AfterFailed != o.AfterFailed || !headHeld(ctx, l, c.LedgerHead) {
		return targetRebuild, nil, nil
	}
	res := &Result{Run: o.Run, To: to, ModelIdentity: ck.Digest, RootDigest: v.RootDigest, Files: v.Files, KeyHint: s.Hint,
		Verdict: gate.Seq, Head: c.LedgerHead, Request: o.Request}
	res.afterFailed(o, gate)
	return targetRecord, res, nil
}

// headHeld tells whether l holds head h: its entry at h's seq has h's hash.
func headHeld(ctx context.Context, l *ledger.Ledger, h ledger.Head) bool {
	now, err := l.Head(ctx)
	if err != nil || now.LedgerID != h.LedgerID {
		return false
	}
	e, err := l.EntryBySeq(ctx, h.Seq)
	return err == nil && e.Hash == h.Hash
}

// replace puts the bundle tmp in place of the earlier bundle at to: the
// old one is moved aside into a new, unlocked staging directory first
// (so the next publish's sweep deletes it if this one is killed), then
// deleted.
func replace(tmp, to string) error {
	aside, err := os.MkdirTemp(filepath.Dir(to), stagingPattern(to))
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if err := os.Rename(to, filepath.Join(aside, "replaced")); err != nil {
		return fmt.Errorf("publish to %s: %w", to, err)
	}
	if err := place(tmp, to); err != nil {
		return err
	}
	if err := os.RemoveAll(aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: delete the replaced bundle %s: %w", aside, err)
	}
	return nil
}
