package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

func newLogCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "list ledger entries",
		Description: "Lists entries in chain order, optionally only one kind or one run. Opens\n" +
			"the ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "kind", Usage: "only entries of this `KIND` (run.start, artifact, metrics, ...)"},
			&cli.StringFlag{Name: "run", Usage: "only entries of this `RUN`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runLog(ctx, logOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Kind: cmd.String("kind"), Run: cmd.String("run")}, cmd.Root().Writer)
			return err
		},
	}
}

type logOptions struct {
	Dir       string
	JSON      bool
	Kind, Run string
}

// bodyPreview is how much of a body the log table shows.
const bodyPreview = 60

func runLog(ctx context.Context, opts logOptions, w io.Writer) ([]ledger.Entry, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	entries := []ledger.Entry{}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: opts.Kind, Run: opts.Run}) {
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, emit(w, opts.JSON, entries, func(w io.Writer) error {
		t := newTable(w, "seq", "at", "kind", "run", "hash", "body")
		for _, e := range entries {
			body := string(e.Body)
			if len(body) > bodyPreview {
				body = body[:bodyPreview] + "…"
			}
			t.Append(fmt.Sprint(e.Seq), e.At[:19], e.Kind, e.Run, e.Hash.Hex()[:12], body)
		}
		if err := t.Render(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d entries%s\n", len(entries), filterNote(opts))
		return err
	})
}

func filterNote(opts logOptions) string {
	var parts []string
	if opts.Kind != "" {
		parts = append(parts, "kind "+opts.Kind)
	}
	if opts.Run != "" {
		parts = append(parts, "run "+opts.Run)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
