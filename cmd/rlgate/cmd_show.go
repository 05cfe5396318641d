package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

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
				return usagef("show takes one argument, an entry's SEQ or HASH; got %d", cmd.Args().Len())
			}
			opts := showOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json")}
			which := cmd.Args().First()
			// Up to 7 digits is a sequence number, anything longer a hash prefix.
			if seq, err := strconv.ParseInt(which, 10, 64); err == nil && len(which) < 8 {
				if seq < 1 {
					return usagef("show %s: sequence numbers start at 1", which)
				}
				opts.Seq = seq
			} else if !isHashPrefix(which) {
				return usagef("show %q: want an entry's SEQ (a number from 1) or 4 to 64 hex digits of its HASH", which)
			} else {
				opts.Hash = which
			}
			_, err := runShow(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

// isHashPrefix reports whether s is 4 to 64 hex digits, with or without
// "blake3:", as rlgate head and log print them.
func isHashPrefix(s string) bool {
	h := strings.TrimPrefix(s, "blake3:")
	return len(h) >= 4 && len(h) <= 64 && strings.Trim(strings.ToLower(h), "0123456789abcdef") == ""
}

// showOptions names the entry by Seq or, when Seq is 0, by Hash prefix.
type showOptions struct {
	Dir  string
	JSON bool
	Seq  int64
	Hash string
}

func runShow(ctx context.Context, opts showOptions, w io.Writer) (*ledger.Entry, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var e ledger.Entry
	if opts.Seq > 0 {
		e, err = l.EntryBySeq(ctx, opts.Seq)
	} else {
		e, err = l.EntryByHash(ctx, opts.Hash)
	}
	if err != nil {
		return nil, err
	}
	return &e, emit(w, opts.JSON, e, func(w io.Writer) error {
		// Kind, run, time and body are as the ledger's rows hold them,
		// which for an old or forged ledger may be any bytes.
		fmt.Fprintf(w, "seq   %d\nhash  %s\nprev  %s\nkind  %s\n", e.Seq, e.Hash, e.Prev, ledger.Printable(e.Kind))
		if e.Run != "" {
			fmt.Fprintf(w, "run   %s\n", ledger.Printable(e.Run))
		}
		fmt.Fprintf(w, "at    %s\n", ledger.Printable(e.At))
		for _, b := range e.Blobs {
			fmt.Fprintf(w, "blob  %s\n", b)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, e.Body, "", "  "); err != nil {
			return err
		}
		fmt.Fprintln(w, "body")
		for line := range strings.Lines(pretty.String()) {
			fmt.Fprintln(w, ledger.Printable(strings.TrimSuffix(line, "\n")))
		}
		return nil
	})
}
