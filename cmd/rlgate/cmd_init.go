package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/ledgers"
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
		Flags: []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := ledgers.Init(ctx, ledgerDir(cmd))
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
