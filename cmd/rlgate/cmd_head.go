package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

func newHeadCommand() *cli.Command {
	return &cli.Command{
		Name:  "head",
		Usage: "print the ledger's head (ledger id, seq, hash)",
		Description: "Prints <ledger id>/<seq>/blake3:<hash> of the last entry. Reports embed it;\n" +
			"'rlgate verify --against HEAD' later checks that the ledger still extends it,\n" +
			"which is the only way to detect a chain whose tail was cut off. Opens the\n" +
			"ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runHead(ctx, headOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json")}, cmd.Root().Writer)
			return err
		},
	}
}

type headOptions struct {
	Dir  string
	JSON bool
}

type headSummary struct {
	ledger.Head
	Text string `json:"head"`
}

func runHead(ctx context.Context, opts headOptions, w io.Writer) (*headSummary, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	h, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	s := &headSummary{Head: h, Text: h.String()}
	return s, emit(w, opts.JSON, s, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, ledger.Printable(s.Text)) // the ledger id is as meta holds it
		return err
	})
}
