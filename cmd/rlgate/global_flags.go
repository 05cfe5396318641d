package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/urfave/cli/v3"
)

// globalFlags are the flags every command takes: where the ledger and its
// blob store are, and where this machine keeps the files a ledger
// recorded elsewhere.
func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    "ledger",
			Usage:   "ledger directory, or a PostgreSQL ledger's postgres://USER@HOST/DB URL",
			Value:   ledger.DefaultDir,
			Sources: cli.EnvVars(ledger.EnvLedger),
		},
		&cli.StringFlag{
			Name:    "blobs",
			Usage:   "a PostgreSQL ledger's blob store: a local `DIR` (blobs) or s3://BUCKET/PREFIX (default: the one rlgate init recorded in the ledger)",
			Sources: cli.EnvVars(ledger.EnvBlobs),
		},
		&cli.StringFlag{
			Name:  "s3-endpoint",
			Usage: "S3 server `URL` for --blobs s3://... (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS); credentials only from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN",
		},
		&cli.StringFlag{
			Name:  "s3-region",
			Usage: "S3 `REGION` for --blobs s3://... (default: AWS_REGION, AWS_DEFAULT_REGION, else asked of the server)",
		},
		&cli.BoolFlag{
			Name:  "s3-path-style",
			Usage: "always name the bucket in the URL path, not the host name (the default except on AWS, Google and Alibaba endpoints)",
		},
		&cli.StringSliceFlag{
			Name:    "data-root",
			Usage:   "`DIR` where this machine keeps the databases and checkpoints a ledger recorded elsewhere, found by the tails of their recorded paths and taken only with their recorded digests (repeatable; tasks, gold and manifests come from the blob store)",
			Sources: cli.EnvVars(dataset.EnvDataRoot),
		},
		&cli.StringFlag{
			Name:    "cache",
			Usage:   "local `DIR` for temporary files of --blobs s3://... (default: one per ledger under the user cache directory)",
			Sources: cli.EnvVars(ledger.EnvCache),
		},
	}
}

// withDataRoots puts the --data-root directories, made absolute, in the
// context every command runs with (dataset.WithDataRoots); one that is
// not a directory is a usage error.
func withDataRoots(ctx context.Context, cmd *cli.Command) (context.Context, error) {
	var roots []string
	for _, d := range cmd.StringSlice("data-root") {
		abs, err := filepath.Abs(d)
		if err != nil {
			return ctx, usagef("--data-root %s: %v", d, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return ctx, usagef("--data-root %s is not a directory. Try: --data-root DIR, a directory holding copies of the files the ledger recorded", d)
		}
		roots = append(roots, abs)
	}
	return dataset.WithDataRoots(ctx, roots), nil
}

// ledgerDir is the ledger directory from --ledger, RLGATE_LEDGER or the
// default, whichever comes first; a PostgreSQL ledger's URL carries the
// blob store from blobsLocation.
func ledgerDir(cmd *cli.Command) string {
	return ledger.WithBlobs(cmd.String("ledger"), blobsLocation(cmd))
}

// blobsLocation is --blobs or RLGATE_BLOBS, with an S3 location's
// endpoint, region, path style and cache from their flags.
func blobsLocation(cmd *cli.Command) string {
	return ledger.WithS3(cmd.String("blobs"), s3Options(cmd))
}

// s3Options are an S3 blob store's endpoint, region, path style and cache
// from their flags.
func s3Options(cmd *cli.Command) ledger.S3Options {
	return ledger.S3Options{Endpoint: cmd.String("s3-endpoint"), Region: cmd.String("s3-region"), PathStyle: cmd.Bool("s3-path-style"),
		Cache: cmd.String("cache")}
}
