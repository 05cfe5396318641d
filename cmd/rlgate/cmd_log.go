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
		Description: "Lists entries in chain order, optionally only one kind or one run, only\n" +
			"the first (--limit) or the last (--tail) N of them. The table fits a\n" +
			"100-column terminal: hashes are cut to 12 hex digits and bodies to what\n" +
			"fits; 'rlgate show SEQ' prints an entry in full, and --json prints every\n" +
			"field of every entry listed. Opens the ledger read-only.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "kind", Usage: "only entries of this `KIND` (run.start, artifact, metrics, ...)"},
			&cli.StringFlag{Name: "run", Usage: "only entries of this `RUN`"},
			&cli.IntFlag{Name: "limit", Usage: "only the first `N` entries that match"},
			&cli.IntFlag{Name: "tail", Usage: "only the last `N` entries that match"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			opts := logOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Kind: cmd.String("kind"), Run: cmd.String("run"),
				Limit: cmd.Int("limit"), Tail: cmd.Int("tail")}
			for _, f := range []string{"limit", "tail"} {
				if cmd.IsSet(f) && cmd.Int(f) < 1 {
					return usagef("--%s wants a positive number of entries, got %d", f, cmd.Int(f))
				}
			}
			if opts.Limit > 0 && opts.Tail > 0 {
				return usagef("--limit and --tail exclude each other")
			}
			_, err := runLog(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type logOptions struct {
	Dir       string
	JSON      bool
	Kind, Run string
	// Limit keeps the first Limit matching entries, Tail the last Tail;
	// zero means all.
	Limit, Tail int
}

// Widths in the log table: the body gets what the other columns leave.
const (
	hashPrefix = 12 // hex digits of an entry hash shown in tables
	runPreview = 24
)

func runLog(ctx context.Context, opts logOptions, w io.Writer) ([]ledger.Entry, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	entries := []ledger.Entry{}
	n := 0 // entries matched; with --tail, entries is a ring of the last Tail
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: opts.Kind, Run: opts.Run}) {
		if err != nil {
			return nil, err
		}
		if opts.Tail > 0 && len(entries) == opts.Tail {
			entries[n%opts.Tail] = e
		} else {
			entries = append(entries, e)
		}
		n++
		if len(entries) == opts.Limit {
			break
		}
	}
	if opts.Tail > 0 && n > opts.Tail {
		k := n % opts.Tail // the oldest kept entry
		entries = append(entries[k:], entries[:k]...)
	}
	return entries, emit(w, opts.JSON, entries, func(w io.Writer) error {
		header := []string{"seq", "at (UTC)", "kind", "run", "hash", "body"}
		rows := make([][]string, len(entries))
		for i, e := range entries {
			rows[i] = []string{fmt.Sprint(e.Seq), e.At[:10] + " " + e.At[11:19], e.Kind, preview(e.Run, runPreview), e.Hash.Hex()[:hashPrefix], string(e.Body)}
		}
		fitTable(header, rows, len(header)-1)
		t := newTable(w, toAny(header)...)
		for _, r := range rows {
			t.Append(toAny(r)...)
		}
		if err := t.Render(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d entries%s\n", len(entries), ledger.Printable(filterNote(opts)))
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
	if opts.Limit > 0 {
		parts = append(parts, fmt.Sprintf("the first %d", opts.Limit))
	}
	if opts.Tail > 0 {
		parts = append(parts, fmt.Sprintf("the last %d", opts.Tail))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
