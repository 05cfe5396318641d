package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ui"
	"github.com/urfave/cli/v3"
)

func newUICommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "look inside the ledger in a browser: runs, entries, verdicts, lineage (read-only)",
		Description: "Serves the ledger, opened read-only, as web pages: every run with its status,\n" +
			"stage, duration and failure reason (filter by stage and status), a run's\n" +
			"inputs and outputs by digest with each blob re-hashed, its parameters,\n" +
			"environment as recorded, log, metric curves, GPU summary and entries; any\n" +
			"entry by seq or hash; the gate verdicts with every check and its evidence,\n" +
			"re-derived as rlgate report does; the lineage of an experiment. Every number\n" +
			"links to the entry it comes from. Pages need no JavaScript and fetch nothing\n" +
			"from the network. Only GET and HEAD are answered. See docs/UI.md.\n\n" +
			"Listens on loopback (" + ui.DefaultAddr + ") unless --addr says otherwise; a\n" +
			"non-loopback --addr needs --token TOKEN (or --token generate, which prints a\n" +
			"new one), and then every request must carry it: open the printed URL once\n" +
			"(?token= sets a cookie) or send Authorization: Bearer TOKEN.\n" +
			"Serves until interrupted (Ctrl-C).\n\n" + exitCodesHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: ui.DefaultAddr, Usage: "`HOST:PORT` to listen on (port 0: any free port)"},
			&cli.StringFlag{Name: "token", Usage: "`TOKEN` every request must carry; \"generate\" makes and prints one (required off loopback)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runUI(ctx, uiOptions{Dir: ledgerDir(cmd), Addr: cmd.String("addr"), Token: cmd.String("token")}, cmd.Root().Writer)
		},
	}
}

type uiOptions struct {
	Dir   string
	Addr  string
	Token string
}

// runUI serves until ctx ends, then returns ctx's error.
func runUI(ctx context.Context, o uiOptions, w io.Writer) error {
	if o.Token == "generate" {
		t, err := ui.NewToken()
		if err != nil {
			return err
		}
		o.Token = t
	}
	loopback, err := ui.CheckAddr(o.Addr, o.Token)
	if err != nil {
		return usageError{msg: err.Error(), cmd: "rlgate ui"}
	}
	l, err := ledger.OpenReadOnly(ctx, o.Dir)
	if err != nil {
		return err
	}
	defer l.Close()
	s, err := ui.New(l, ui.Options{Token: o.Token, Loopback: loopback})
	if err != nil {
		return err
	}
	return s.Serve(ctx, o.Addr, func(a net.Addr) {
		fmt.Fprintf(w, "rlgate: serving %s read-only at %s; stop with Ctrl-C\n", ledger.Printable(l.Location()), ui.URL(a, o.Token))
	})
}
