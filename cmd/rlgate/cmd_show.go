package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print one entry in full",
		ArgsUsage: "SEQ|HASH",
		Description: "Prints the entry with that sequence number, or whose hash starts with the\n" +
			"given hex digits (at least 4), with its body. Opens the ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("show takes one argument, an entry's SEQ or HASH; got %d", cmd.Args().Len())
			}
			e, err := ledgers.Show(ctx, ledgerDir(cmd), cmd.Args().First())
			if err != nil {
				return err
			}
			return emit(cmd, e, func(w io.Writer) error { return ledgers.WriteEntry(w, e) })
		},
	}
}
