package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/publish"
	"github.com/urfave/cli/v3"
)

func newKeygenCommand() *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "make an ECDSA P-256 signing key for rlgate publish",
		Description: "Writes a new ECDSA P-256 private key as PKCS #8 PEM to FILE (mode 0600) and\n" +
			"its public key as PEM to FILE.pub: the key type OpenSSF Model Signing's key\n" +
			"method needs. Give FILE.pub to whoever checks a published model\n" +
			"(rlgate verify-bundle --public-key, model_signing verify key --public_key).\n" +
			"Refuses to overwrite either file. Prints the key's OMS hint (the SHA-256 of\n" +
			"the public key's PEM), which every bundle signed with it names.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "out", Usage: "private key `FILE`; the public key goes to FILE.pub", Required: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out := cmd.String("out")
			hint, err := publish.GenerateKey(out)
			if err != nil {
				return err
			}
			s := &keygenSummary{PrivateKey: out, PublicKey: out + publish.PublicKeySuffix, Hint: hint}
			return emit(cmd, s, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rlgate: wrote private key %s (keep it secret) and public key %s; key hint %s\n", s.PrivateKey, s.PublicKey, s.Hint)
				return err
			})
		},
	}
}

// keygenSummary is what rlgate keygen prints.
type keygenSummary struct {
	PrivateKey string `json:"private_key"`
	PublicKey  string `json:"public_key"`
	Hint       string `json:"hint"`
}
