package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rlgate/rlgate/ledger"
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
		Flags: []cli.Flag{jsonFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runRuns(ctx, runsOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json")}, cmd.Root().Writer)
			return err
		},
	}
}

type runsOptions struct {
	Dir  string
	JSON bool
}

// runRow is one run as rlgate runs prints it.
type runRow struct {
	ledger.Run
	// DurationS is from run.start to run.end; absent while running.
	DurationS *float64 `json:"duration_s,omitempty"`
	// Reason is the run.end body's "reason", where the recorder gave one.
	Reason string `json:"reason,omitempty"`
}

func runRuns(ctx context.Context, opts runsOptions, w io.Writer) ([]runRow, error) {
	l, err := ledger.OpenReadOnly(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	runs, err := l.Runs(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]runRow, 0, len(runs))
	for _, r := range runs {
		row := runRow{Run: r}
		if r.EndedSeq != nil {
			// Every writer's run.end carries Reason as Fail writes it.
			body, err := ledger.DecodeEntry[ledger.FailedBody](ctx, l, *r.EndedSeq)
			if err != nil {
				return nil, fmt.Errorf("run %q: read its run.end: %w", r.Run, err)
			}
			row.Reason = body.Reason
			start, err1 := time.Parse(time.RFC3339Nano, r.StartedAt)
			stop, err2 := time.Parse(time.RFC3339Nano, r.EndedAt)
			if err1 == nil && err2 == nil {
				d := stop.Sub(start).Seconds()
				row.DurationS = &d
			}
		}
		rows = append(rows, row)
	}
	return rows, emit(w, opts.JSON, rows, func(w io.Writer) error {
		header := []string{"run", "status", "stage", "started (UTC)", "duration", "reason"}
		cells := make([][]string, len(rows))
		for i, r := range rows {
			dur := "-"
			if r.DurationS != nil {
				dur = (time.Duration(*r.DurationS * float64(time.Second))).Round(time.Second).String()
			}
			cells[i] = []string{r.Run.Run, string(r.Status), r.Stage, r.StartedAt[:10] + " " + r.StartedAt[11:19], dur, r.Reason}
		}
		fitTable(header, cells, len(header)-1) // the reason in full is in --json
		t := newTable(w, toAny(header)...)
		for _, c := range cells {
			t.Append(toAny(c)...)
		}
		if err := t.Render(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "%d runs\n", len(rows))
		return err
	})
}
