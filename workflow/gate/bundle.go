package gate

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/workflow/textout"
	"github.com/rlgate/rlgate/workflow/usage"
)

// PublishFrom is rlgate publish: Publish over the ledger in dir.
func PublishFrom(ctx context.Context, dir string, o publish.Options) (*publish.Result, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return Publish(ctx, l, o)
}

// WritePublished says in a line what a publish signed and where.
func WritePublished(w io.Writer, r *publish.Result) error {
	_, err := fmt.Fprintf(w, "rlgate: published run %s (model %s) to %s: %d files signed, root sha256:%s, key %s; gate verdict entry %d, ledger head %s, publish entry %d\n",
		r.Run, r.ModelIdentity, r.To, r.Files, r.RootDigest, r.KeyHint, r.Verdict, r.Head, r.Seq)
	return err
}

// VerifyBundle is rlgate verify-bundle: the bundle in dir verified
// (publish.VerifyBundle) and, when ledgerDir is not empty, its claims
// re-derived from that ledger, opened read-only.
func VerifyBundle(ctx context.Context, dir, ledgerDir string, o publish.VerifyOptions) (*publish.Verification, error) {
	if o.PublicKey != "" && len(o.CertificateChain) > 0 {
		return nil, usage.Errorf("verify-bundle: give --public-key or --certificate-chain, not both")
	}
	v, err := publish.VerifyBundle(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	if ledgerDir != "" {
		l, err := ledger.OpenReadOnly(ctx, ledgerDir)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		if err := v.CheckLedger(ctx, l); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// BundleFailure names the checks of bundle's verification that failed, for
// the command's exit status; empty when every check passed.
func BundleFailure(bundle string, v *publish.Verification) string {
	if v.OK {
		return ""
	}
	var failed []string
	for _, c := range v.Checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	return fmt.Sprintf("verify-bundle %s: %d of %d checks failed: %s", bundle, v.Failed, len(v.Checks), strings.Join(failed, ", "))
}

// WriteVerification writes every check of a bundle's verification, then
// what the bundle claims and whether those claims were re-derived.
func WriteVerification(w io.Writer, v *publish.Verification) error {
	t := textout.NewTable(w, "check", "result", "finding")
	for _, c := range v.Checks {
		t.Append(c.Name, textout.PassFail(c.OK), c.Message)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if p := v.Claims; p != nil {
		if p.AfterFailed != "" {
			fmt.Fprintf(w, "PUBLISHED AFTER A FAILED GATE VERDICT: %q (the publisher's reason)\n", p.AfterFailed)
		}
		result := "passed"
		if !p.Gate.Verdict.OK {
			result = "failed"
		}
		fmt.Fprintf(w, "bundle %s claims: run %s, model %s, gate verdict entry %d (%s, %s, hash %s), ledger head %s\n",
			v.Dir, ledger.Printable(p.Run), p.ModelIdentity, p.Gate.Seq, result, ledger.Printable(p.Policy), p.Gate.Hash, ledger.Printable(p.LedgerHead.String()))
		for _, h := range p.Verdicts {
			res := "passed"
			if !h.OK {
				res = fmt.Sprintf("FAILED %d of %d checks", h.Failed, h.Checks)
			}
			fmt.Fprintf(w, "  gate verdict entry %d for this model: %s (%s)\n", h.Seq, res, ledger.Printable(h.Policy))
		}
		_, err := fmt.Fprintln(w, rederivedNote(v))
		return err
	}
	_, err := fmt.Fprintf(w, "bundle %s has no verified %s: it claims no gate verdict and no ledger head\n", v.Dir, publish.ProvenanceFile)
	return err
}

// rederivedNote says whether the verdict above is the signer's statement
// or was re-derived from a ledger.
func rederivedNote(v *publish.Verification) string {
	for _, c := range v.Checks {
		if c.Name == publish.CheckLedgerRederived {
			if c.OK {
				return "The verdict was re-derived from the ledger given with --ledger."
			}
			return "The verdict did NOT re-derive from the ledger given with --ledger (see the failed check)."
		}
	}
	return "These are the signer's statements, checked only for their signature: run again with --ledger DIR to re-derive the verdict from the ledger."
}
