package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/workflow/gate"
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
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "public-key", Usage: "public key PEM `FILE` (key method)"},
			&cli.StringSliceFlag{Name: "certificate-chain", Usage: "PEM `FILE` of trusted certificates (certificate method; repeatable)"},
			&cli.StringSliceFlag{Name: "ignore-path", Usage: "`PATH` inside DIR to leave out, as model_signing --ignore-paths (repeatable)"},
			&cli.StringFlag{Name: "signature", Usage: "OMS bundle `FILE` (default DIR/model.sig)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("verify-bundle: give one DIR")
			}
			bundle, o := cmd.Args().First(), publish.VerifyOptions{PublicKey: cmd.String("public-key"), CertificateChain: cmd.StringSlice("certificate-chain"),
				IgnorePaths: cmd.StringSlice("ignore-path"), Signature: cmd.String("signature")}
			var ldir string // empty: check no ledger
			if cmd.IsSet("ledger") {
				ldir = ledgerDir(cmd)
			}
			v, err := gate.VerifyBundle(ctx, bundle, ldir, o)
			if err != nil {
				return err
			}
			return emitChecked(cmd.Root().Writer, cmd.Bool("json"), v, func(w io.Writer) error { return gate.WriteVerification(w, v) },
				gate.BundleFailure(bundle, v))
		},
	}
}
