package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/progress"
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
			Flags: []cli.Flag{jsonFlag,
				&cli.StringFlag{Name: "from", Usage: "the ledger `DIR` (or postgres:// URL) to copy"},
				&cli.StringFlag{Name: "to", Usage: "the `DIR` (or postgres:// URL) to copy it into: missing, empty, or an earlier copy"},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				blobs := blobsLocation(cmd)
				opts := ledgerCopyOptions{From: ledger.WithBlobs(cmd.String("from"), blobs), To: ledger.WithBlobs(cmd.String("to"), blobs),
					JSON: cmd.Bool("json"), Progress: cmd.Root().ErrWriter}
				switch {
				case opts.From == "":
					return usagef("ledger copy: --from DIR is required")
				case opts.To == "":
					return usagef("ledger copy: --to DIR is required")
				}
				_, err := runLedgerCopy(ctx, opts, cmd.Root().Writer)
				return err
			},
		}},
	}
}

type ledgerCopyOptions struct {
	From, To string
	JSON     bool
	Progress io.Writer // where progress goes; nil: nowhere
	Batch    int       // entries per transaction; 0: the ledger's default
}

func runLedgerCopy(ctx context.Context, opts ledgerCopyOptions, w io.Writer) (*ledger.CopyResult, error) {
	src, err := ledger.OpenReadOnly(ctx, opts.From)
	if errors.Is(err, ledger.ErrNoLedger) {
		return nil, &ledger.Error{Op: "ledger copy --from", Path: opts.From, Err: ledger.ErrNoLedger,
			Hint: "give --from a ledger directory (made by rlgate init or rlgate ledger copy)"}
	}
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var bar *progress.Bar
	var shown int64
	res, err := ledger.Copy(ctx, src, opts.To, ledger.CopyOptions{Batch: opts.Batch, Progress: func(copied, total int64) {
		if bar == nil && total > 0 {
			bar = progress.Start(opts.Progress, isTerminal(opts.Progress), 0, "ledger copy", opts.From, "entries", int(total))
		}
		for ; bar != nil && shown < copied; shown++ {
			bar.Done(false)
		}
	}})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return nil, err
	}
	return res, emit(w, opts.JSON, res, func(w io.Writer) error {
		made := ""
		if res.Created {
			made = " (a new ledger)"
		}
		_, err := fmt.Fprintf(w, "copied %d entries and %d blobs (%d bytes) from %s to %s%s\nhead %s\n",
			res.Entries, res.Blobs, res.BlobBytes, res.From, res.To, made, res.Head)
		return err
	})
}
