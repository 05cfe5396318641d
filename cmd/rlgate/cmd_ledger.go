package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newLedgerCommand() *cli.Command {
	return &cli.Command{
		Name:  "ledger",
		Usage: "work on whole ledgers",
		Commands: []*cli.Command{{
			Name:  "copy",
			Usage: "copy a ledger's entries and blobs into another directory",
			Description: "Copies the ledger in --from into --to: every entry, in seq order, with the\n" +
				"blobs it names (each blob stored and re-hashed before the entry naming it).\n" +
				"--to may be missing or empty (the copy is created as 'rlgate init' creates a\n" +
				"ledger, with the same ledger id) or an earlier copy, which gets only the\n" +
				"entries it lacks. Either may be a PostgreSQL ledger's URL, whose blob store\n" +
				"(a local directory, or s3://BUCKET/PREFIX with --s3-endpoint and friends)\n" +
				"--blobs gives (or the URL's blobs= parameter, when both are URLs); a ledger\n" +
				"directory keeps its blobs in itself.\n" +
				"Afterwards both ledgers have the same head, and the copy verifies as the\n" +
				"source does. --from is only read, so it may be a ledger you\n" +
				"cannot write. A copy whose chain differs from the source's is refused, naming\n" +
				"the first seq where they differ; so is one that has entries the source lacks,\n" +
				"and an entry or blob of the source that does not match its hash.\n" +
				"Ctrl-C stops it between batches of entries: the copy then holds whole\n" +
				"entries with their blobs, and running the command again goes on.\n\n" + exitCodesHelp,
			Flags: []cli.Flag{jsonFlag(),
				&cli.StringFlag{Name: "from", Usage: "the ledger `DIR` (or postgres:// URL) to copy"},
				&cli.StringFlag{Name: "to", Usage: "the `DIR` (or postgres:// URL) to copy it into: missing, empty, or an earlier copy"},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				blobs := blobsLocation(cmd)
				from, to := ledger.WithBlobs(cmd.String("from"), blobs), ledger.WithBlobs(cmd.String("to"), blobs)
				res, err := ledgers.Copy(ctx, from, to, ledgers.CopyOptions{Progress: cmd.Root().ErrWriter, Terminal: isTerminal(cmd.Root().ErrWriter)})
				if err != nil {
					return err
				}
				return emit(cmd, res, func(w io.Writer) error { return ledgers.WriteCopy(w, res) })
			},
		}},
	}
}
