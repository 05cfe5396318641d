package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
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
		Flags: []cli.Flag{jsonFlag,
			&cli.BoolFlag{Name: "record", Usage: "store the manifests in the ledger as dataset entries"},
			&cli.StringFlag{Name: "name", Validator: ledger.CheckName, Usage: "dataset `NAME` for --record (default: the path's base name; only with one PATH)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			opts := hashOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Record: cmd.Bool("record"), Name: cmd.String("name"), Paths: cmd.Args().Slice()}
			if len(opts.Paths) == 0 {
				return usagef("hash needs at least one PATH")
			}
			if opts.Name != "" && len(opts.Paths) != 1 {
				return usagef("--name names one dataset; give one PATH")
			}
			_, err := runHash(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type hashOptions struct {
	Dir    string
	JSON   bool
	Record bool
	Name   string
	Paths  []string
}

type hashResult struct {
	*manifests.DatasetManifest
	Name     string         `json:"name,omitempty"`
	Seq      int64          `json:"seq,omitempty"`      // the dataset entry, with --record
	Manifest *ledger.Digest `json:"manifest,omitempty"` // the manifest blob, with --record
}

func runHash(ctx context.Context, opts hashOptions, w io.Writer) ([]hashResult, error) {
	var l *ledger.Ledger
	if opts.Record {
		var err error
		if l, err = ledger.Open(ctx, opts.Dir); err != nil {
			return nil, err
		}
		defer l.Close()
	}
	var out []hashResult
	for _, p := range opts.Paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := manifests.HashTree(ctx, p)
		if err != nil {
			return nil, err
		}
		r := hashResult{DatasetManifest: m}
		if l != nil {
			r.Name = opts.Name
			if r.Name == "" {
				r.Name = filepath.Base(filepath.Clean(p))
			}
			e, err := manifests.RecordDataset(ctx, l, r.Name, m)
			if err != nil {
				return nil, err
			}
			r.Seq, r.Manifest = e.Seq, &e.Blobs[0]
		}
		out = append(out, r)
	}
	return out, emit(w, opts.JSON, out, func(w io.Writer) error {
		for _, r := range out {
			fmt.Fprintf(w, "%s  %s  (%d files, %d bytes)\n", r.Digest, r.Root, r.Files, r.Bytes)
			if r.Seq != 0 {
				fmt.Fprintf(w, "  recorded as dataset %q, entry %d, manifest %s\n", r.Name, r.Seq, r.Manifest)
			}
		}
		return nil
	})
}
