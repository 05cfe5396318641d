package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check the hash chain, every blob and the derived tables",
		Description: "Runs SQLite's integrity check on ledger.db, compares its schema with the one\n" +
			"rlgate creates (an added trigger, view, table or index is a finding), walks\n" +
			"the whole chain (links, entry hashes, canonical bodies; a row outside the\n" +
			"chain, such as seq 0, is a finding), re-hashes every referenced blob (which\n" +
			"must be a regular file) and rebuilds the derived tables from the entries to\n" +
			"compare them. Lists every finding, damaged pages included; an unreferenced\n" +
			"blob is a note, not a failure. With --against HEAD (from 'rlgate head' or a\n" +
			"report) it also checks that the ledger still extends that head, which alone\n" +
			"catches a cut or consistently rewritten tail. Ctrl-C stops it at once.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "against", Usage: "a head printed earlier, `ID/SEQ/blake3:HASH`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			v, err := ledgers.Verify(ctx, ledgerDir(cmd), cmd.String("against"))
			if err != nil {
				return err
			}
			return emitChecked(cmd.Root().Writer, cmd.Bool("json"), v.VerifyReport, v.WriteText, v.Failure())
		},
	}
}
