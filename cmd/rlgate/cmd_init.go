package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

func newInitCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create a new ledger",
		Description: "Creates a ledger directory (default ./.rlgate, or --ledger / RLGATE_LEDGER)\n" +
			"holding ledger.db and the blob store. The directory must be missing or empty;\n" +
			"an existing ledger is never touched. The ledger is built beside it in a\n" +
			"temporary .NAME.init-* directory and renamed into place, so an interrupted\n" +
			"init leaves no ledger (and perhaps that directory, which may be deleted)\n" +
			"rather than half of one.\n\n" +
			"--ledger postgres://USER@HOST/DB creates the ledger in that database instead,\n" +
			"with its blobs in --blobs DIR or in an S3 bucket, --blobs s3://BUCKET/PREFIX\n" +
			"(the bucket must exist; see --s3-endpoint, --s3-region, --s3-path-style and\n" +
			"--cache; credentials only from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and\n" +
			"AWS_SESSION_TOKEN, never recorded), and says where the ledger is (its URL\n" +
			"without the password) and where its blobs go.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runInit(ctx, initOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json")}, cmd.Root().Writer)
			return err
		},
	}
}

type initOptions struct {
	Dir  string
	JSON bool
}

type initSummary struct {
	LedgerID string `json:"ledger_id"`
	Dir      string `json:"dir"`
	// PostgreSQL and Blobs say, for a PostgreSQL ledger, where it is (its
	// URL without the password) and where its blobs go.
	PostgreSQL string      `json:"postgresql,omitempty"`
	Blobs      string      `json:"blobs,omitempty"`
	Head       ledger.Head `json:"head"`
}

func runInit(ctx context.Context, opts initOptions, w io.Writer) (*initSummary, error) {
	l, err := ledger.Init(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	s := &initSummary{LedgerID: l.ID(), Dir: l.Dir(), Head: head}
	if l.IsPostgres() {
		s.PostgreSQL, s.Blobs = l.Location(), l.BlobsLocation()
	}
	return s, emit(w, opts.JSON, s, func(w io.Writer) error {
		var err error
		if s.PostgreSQL != "" {
			_, err = fmt.Fprintf(w, "created ledger %s in PostgreSQL at %s, blobs in %s\nhead %s\n", s.LedgerID, s.PostgreSQL, s.Blobs, s.Head)
		} else {
			_, err = fmt.Fprintf(w, "created ledger %s in %s\nhead %s\n", s.LedgerID, s.Dir, s.Head)
		}
		return err
	})
}
