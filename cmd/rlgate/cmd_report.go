package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/workflow/report"
	"github.com/urfave/cli/v3"
)

func newReportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write a report from the ledger alone, or check one against it",
		Description: "Writes into --out DIR a report of an experiment built from the ledger alone:\n" +
			"the model table (Base / SFT / RL / No-update: accuracy with Wilson intervals,\n" +
			"the paired difference to the baseline with its bootstrap interval, b/c,\n" +
			"exact McNemar p, Holm p and the minimum detectable effect; over all tasks,\n" +
			"per difficulty and per database), the gate's claims and audit checks, each\n" +
			"evaluation's budget, training curves (reward, KL, lr, response length), the\n" +
			"lineage of every stage by digest and the ledger head, each number with the\n" +
			"ledger entries behind it. Formats: report.md, report.html (one\n" +
			"self-contained page, inline SVG charts, no script) and report.json (always\n" +
			"written: the evidence bundle --check reads).\n\n" +
			"The runs are those of the latest gate.verdict, or --runs/--train/--policy as\n" +
			"rlgate gate takes them (then the latest verdict of exactly those runs).\n" +
			"Unless a passing verdict covers them, the first line of every format names\n" +
			"the unsupported claims and no gain is stated anywhere.\n\n" +
			"--check DIR re-derives every number of a written report from the ledger as\n" +
			"it was at the head the report records, lists each difference (file:line,\n" +
			"report value, ledger value) and every missing or extra file, and exits 3 on\n" +
			"any difference, 0 when all match.\n\n" + exitCodesHelp,
		Flags: append([]cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "out", Usage: "write the report into `DIR`"},
			&cli.StringFlag{Name: "format", Value: "md,html,json", Usage: "`FORMATS` to write, of md, html, json (json is always written)"},
			&cli.StringFlag{Name: "policy", Usage: "YAML policy `FILE` naming the runs and claims (as rlgate gate takes it)"},
			&cli.StringFlag{Name: "check", Usage: "check the report in `DIR` against the ledger"},
		}, subjectsFlags(false)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o := reportOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Out: cmd.String("out"), Check: cmd.String("check"), Notes: cmd.Root().ErrWriter}
			if o.Check != "" && (cmd.IsSet("format") || cmd.IsSet("policy") || cmd.IsSet("runs") || cmd.IsSet("train")) {
				return usagef("report --check: the report's report.json says what it covers; give no --format, --policy, --runs or --train")
			}
			s, err := subjectsFrom(cmd)
			if err != nil {
				return err
			}
			if o.Report, err = report.Request(cmd.String("format"), cmd.String("policy"), s); err != nil {
				return err
			}
			_, err = runReport(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

type reportOptions struct {
	Dir    string // ledger
	JSON   bool
	Out    string // write the report here
	Check  string // or check the report here
	Report reports.Options
	Notes  io.Writer // hears which run each stage name was taken to be; nil: none
}

func runReport(ctx context.Context, o reportOptions, w io.Writer) (*report.Summary, error) {
	s, err := report.Run(ctx, o.Dir, o.Report, o.Out, o.Check, o.Notes)
	if err != nil {
		return nil, err
	}
	return s, emitChecked(w, o.JSON, s, s.WriteText, s.Failure())
}
