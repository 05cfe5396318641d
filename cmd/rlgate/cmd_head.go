package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newHeadCommand() *cli.Command {
	return &cli.Command{
		Name:  "head",
		Usage: "print the ledger's head (ledger id, seq, hash)",
		Description: "Prints <ledger id>/<seq>/blake3:<hash> of the last entry. Reports embed it;\n" +
			"'rlgate verify --against HEAD' later checks that the ledger still extends it,\n" +
			"which is the only way to detect a chain whose tail was cut off. Opens the\n" +
			"ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := ledgers.Head(ctx, ledgerDir(cmd))
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
