package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/workflow/ledgers"
	"github.com/urfave/cli/v3"
)

func newRunsCommand() *cli.Command {
	return &cli.Command{
		Name:  "runs",
		Usage: "list the runs in the ledger",
		Description: "Lists every run in start order: id, status (running, ok, failed,\n" +
			"interrupted), stage, start time, duration, and the reason its run.end entry\n" +
			"gives for a failure or interruption. Opens the ledger read-only: a run whose\n" +
			"recorder died shows as running until a writing command closes it.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			rows, err := ledgers.Runs(ctx, ledgerDir(cmd))
			if err != nil {
				return err
			}
			return emit(cmd, rows, func(w io.Writer) error { return ledgers.WriteRuns(w, rows) })
		},
	}
}
