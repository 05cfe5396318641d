package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/publish"
	"github.com/urfave/cli/v3"
)

func newVerifyBundleCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify-bundle",
		Usage:     "check a published model's signatures, file digests and claims",
		ArgsUsage: "DIR",
		Description: "Checks DIR/model.sig as the OpenSSF reference verifier (model_signing\n" +
			"verify) does: the OMS v1.0 schemas, the signer (--public-key for the key\n" +
			"method, whose hint must name it; --certificate-chain for the certificate\n" +
			"method, whose chain must reach a certificate in those files), the DSSE\n" +
			"signature, the root digest, and every file's SHA-256, with none missing and\n" +
			"none unsigned. When DIR holds rlgate.provenance.json (rlgate publish wrote\n" +
			"it), also its signature by the same key, that its subject is the OMS root\n" +
			"digest, that the weights have the model identity it names, and the gate\n" +
			"verdict it claims; then prints which gate verdict and ledger head the bundle\n" +
			"claims. Without --ledger these are the signer's statements, checked only for\n" +
			"their signature: nothing is re-derived. With --ledger (or RLGATE_LEDGER) it\n" +
			"also checks that the ledger holds that head and that verdict, with the hashes\n" +
			"named, re-derives the verdict from the entries it read, and checks the publish\n" +
			"entry (run rlgate verify for the chain between). Exit 3 names every failed\n" +
			"check.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "public-key", Usage: "public key PEM `FILE` (key method)"},
			&cli.StringSliceFlag{Name: "certificate-chain", Usage: "PEM `FILE` of trusted certificates (certificate method; repeatable)"},
			&cli.StringSliceFlag{Name: "ignore-path", Usage: "`PATH` inside DIR to leave out, as model_signing --ignore-paths (repeatable)"},
			&cli.StringFlag{Name: "signature", Usage: "OMS bundle `FILE` (default DIR/model.sig)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("verify-bundle: give one DIR")
			}
			o := verifyBundleOptions{Bundle: cmd.Args().First(), JSON: cmd.Bool("json"), VerifyOptions: publish.VerifyOptions{
				PublicKey: cmd.String("public-key"), CertificateChain: cmd.StringSlice("certificate-chain"),
				IgnorePaths: cmd.StringSlice("ignore-path"), Signature: cmd.String("signature")}}
			if o.PublicKey != "" && len(o.CertificateChain) > 0 {
				return usagef("verify-bundle: give --public-key or --certificate-chain, not both")
			}
			if cmd.IsSet("ledger") {
				o.Ledger = ledgerDir(cmd)
			}
			_, err := runVerifyBundle(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

type verifyBundleOptions struct {
	Bundle string
	Ledger string // empty: check no ledger
	JSON   bool
	publish.VerifyOptions
}

func runVerifyBundle(ctx context.Context, o verifyBundleOptions, w io.Writer) (*publish.Verification, error) {
	v, err := publish.VerifyBundle(ctx, o.Bundle, o.VerifyOptions)
	if err != nil {
		return nil, err
	}
	if o.Ledger != "" {
		l, err := ledger.OpenReadOnly(ctx, o.Ledger)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		if err := v.CheckLedger(ctx, l); err != nil {
			return nil, err
		}
	}
	err = emit(w, o.JSON, v, func(w io.Writer) error { return printVerification(w, v) })
	if err == nil && !v.OK {
		var failed []string
		for _, c := range v.Checks {
			if !c.OK {
				failed = append(failed, c.Name)
			}
		}
		err = checkFailed{fmt.Sprintf("verify-bundle %s: %d of %d checks failed: %s", o.Bundle, v.Failed, len(v.Checks), strings.Join(failed, ", "))}
	}
	return v, err
}

func printVerification(w io.Writer, v *publish.Verification) error {
	t := newTable(w, "check", "result", "finding")
	for _, c := range v.Checks {
		t.Append(c.Name, passFail(c.OK), c.Message)
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
