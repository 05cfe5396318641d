package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newLogCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "list ledger entries",
		Description: "Lists entries in chain order, optionally only one kind or one run, only\n" +
			"the first (--limit) or the last (--tail) N of them. The table fits a\n" +
			"100-column terminal: hashes are cut to 12 hex digits and bodies to what\n" +
			"fits; 'rlgate show SEQ' prints an entry in full, and --json prints every\n" +
			"field of every entry listed. Opens the ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "kind", Usage: "only entries of this `KIND` (run.start, artifact, metrics, ...)"},
			&cli.StringFlag{Name: "run", Usage: "only entries of this `RUN`"},
			&cli.IntFlag{Name: "limit", Usage: "only the first `N` entries that match"},
			&cli.IntFlag{Name: "tail", Usage: "only the last `N` entries that match"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			opts := ledgers.LogOptions{Kind: cmd.String("kind"), Run: cmd.String("run"), Limit: cmd.Int("limit"), Tail: cmd.Int("tail")}
			for _, f := range []string{"limit", "tail"} {
				if cmd.IsSet(f) && cmd.Int(f) < 1 {
					return usagef("--%s wants a positive number of entries, got %d", f, cmd.Int(f))
				}
			}
			s, err := ledgers.Log(ctx, ledgerDir(cmd), opts)
			if err != nil {
				return err
			}
			return emit(cmd, s.Entries, s.WriteText)
		},
	}
}
