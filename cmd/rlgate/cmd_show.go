package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

func newShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print one entry in full",
		ArgsUsage: "SEQ|HASH",
		Description: "Prints the entry with that sequence number, or whose hash starts with the\n" +
			"given hex digits (at least 4), with its body. Opens the ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("show takes one SEQ or HASH")
			}
			_, err := runShow(ctx, showOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Which: cmd.Args().First()}, cmd.Root().Writer)
			return err
		},
	}
}

type showOptions struct {
	Dir   string
	JSON  bool
	Which string
}

func runShow(ctx context.Context, opts showOptions, w io.Writer) (*ledger.Entry, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var e ledger.Entry
	if seq, perr := strconv.ParseInt(opts.Which, 10, 64); perr == nil && len(opts.Which) < 8 {
		e, err = l.EntryBySeq(ctx, seq)
	} else {
		e, err = l.EntryByHash(ctx, opts.Which)
	}
	if err != nil {
		return nil, err
	}
	return &e, emit(w, opts.JSON, e, func(w io.Writer) error {
		fmt.Fprintf(w, "seq   %d\nhash  %s\nprev  %s\nkind  %s\n", e.Seq, e.Hash, e.Prev, e.Kind)
		if e.Run != "" {
			fmt.Fprintf(w, "run   %s\n", e.Run)
		}
		fmt.Fprintf(w, "at    %s\n", e.At)
		for _, b := range e.Blobs {
			fmt.Fprintf(w, "blob  %s\n", b)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, e.Body, "", "  "); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "body\n%s\n", pretty.String())
		return err
	})
}
