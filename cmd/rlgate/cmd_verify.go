package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/ledger"
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
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "against", Usage: "a head printed earlier, `ID/SEQ/blake3:HASH`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			opts := verifyOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json")}
			if s := cmd.String("against"); s != "" {
				h, err := ledger.ParseHead(s)
				if err != nil {
					return usagef("--against: %v", err)
				}
				opts.Against = &h
			}
			_, err := runVerify(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type verifyOptions struct {
	Dir     string
	JSON    bool
	Against *ledger.Head
}

func runVerify(ctx context.Context, opts verifyOptions, w io.Writer) (*ledger.VerifyReport, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	rep, err := l.Verify(ctx, ledger.VerifyOptions{Against: opts.Against})
	if err != nil {
		return nil, err
	}
	err = emit(w, opts.JSON, rep, func(w io.Writer) error {
		for _, f := range rep.Findings {
			fmt.Fprintln(w, ledger.Printable(fmt.Sprint(f)))
		}
		_, err := fmt.Fprintf(w, "%d entries, %d blobs (%d bytes) checked: %d errors, %d notes\nhead %s\n",
			rep.Entries, rep.BlobsChecked, rep.BlobBytes, rep.Errors, rep.Notes, ledger.Printable(fmt.Sprint(rep.Head)))
		return err
	})
	if err == nil && !rep.OK() {
		err = checkFailed{fmt.Sprintf("verify %s: %d errors", l.Dir(), rep.Errors)}
	}
	return rep, err
}
