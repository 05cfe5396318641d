package main

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print one entry in full",
		ArgsUsage: "SEQ|HASH",
		Description: "Prints the entry with that sequence number, or whose hash starts with the\n" +
			"given hex digits (at least 4), with its body. Opens the ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("show takes one argument, an entry's SEQ or HASH; got %d", cmd.Args().Len())
			}
			var seq int64
			var hash string
			which := cmd.Args().First()
			// Up to 7 digits is a sequence number, anything longer a hash prefix.
			if n, err := strconv.ParseInt(which, 10, 64); err == nil && len(which) < 8 {
				seq = n
				if seq < 1 {
					return usagef("show %s: sequence numbers start at 1", which)
				}
			} else if !isHashPrefix(which) {
				return usagef("show %q: want an entry's SEQ (a number from 1) or 4 to 64 hex digits of its HASH", which)
			} else {
				hash = which
			}
			e, err := ledgers.Show(ctx, ledgerDir(cmd), seq, hash)
			if err != nil {
				return err
			}
			return emit(cmd, e, func(w io.Writer) error { return ledgers.WriteEntry(w, e) })
		},
	}
}

// isHashPrefix reports whether s is 4 to 64 hex digits, with or without
// "blake3:", as rlgate head and log print them.
func isHashPrefix(s string) bool {
	h := strings.TrimPrefix(s, "blake3:")
	return len(h) >= 4 && len(h) <= 64 && strings.Trim(strings.ToLower(h), "0123456789abcdef") == ""
}
