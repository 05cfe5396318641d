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
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "out", Usage: "private key `FILE`; the public key goes to FILE.pub", Required: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runKeygen(ctx, keygenOptions{Out: cmd.String("out"), JSON: cmd.Bool("json")}, cmd.Root().Writer)
			return err
		},
	}
}

type keygenOptions struct {
	Out  string
	JSON bool
}

type keygenSummary struct {
	PrivateKey string `json:"private_key"`
	PublicKey  string `json:"public_key"`
	Hint       string `json:"hint"`
}

func runKeygen(_ context.Context, o keygenOptions, w io.Writer) (*keygenSummary, error) {
	hint, err := publish.GenerateKey(o.Out)
	if err != nil {
		return nil, err
	}
	s := &keygenSummary{PrivateKey: o.Out, PublicKey: o.Out + publish.PublicKeySuffix, Hint: hint}
	return s, emit(w, o.JSON, s, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "rlgate: wrote private key %s (keep it secret) and public key %s; key hint %s\n", s.PrivateKey, s.PublicKey, s.Hint)
		return err
	})
}
