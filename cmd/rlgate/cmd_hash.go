package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/digest"
	"github.com/urfave/cli/v3"
)

func newHashCommand() *cli.Command {
	return &cli.Command{
		Name:      "hash",
		Usage:     "digest files or directory trees (a dataset manifest)",
		ArgsUsage: "PATH...",
		Description: "Prints the BLAKE3 digest of each PATH: for a file, the same value b3sum\n" +
			"prints; for a directory, a Merkle digest over its sorted tree (symlinks are\n" +
			"recorded as links and never followed). --json prints every file's digest\n" +
			"and size. --record stores each manifest as a blob and appends a dataset\n" +
			"entry to the ledger. Ctrl-C stops hashing at once (exit 130).\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.BoolFlag{Name: "record", Usage: "store the manifests in the ledger as dataset entries"},
			&cli.StringFlag{Name: "name", Validator: ledger.CheckName, Usage: "dataset `NAME` for --record (default: the path's base name; only with one PATH)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out, err := digest.Trees(ctx, ledgerDir(cmd), cmd.Args().Slice(), cmd.Bool("record"), cmd.String("name"))
			if err != nil {
				return err
			}
			return emit(cmd, out, func(w io.Writer) error { return digest.WriteTrees(w, out) })
		},
	}
}
