package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/audits"
	"github.com/urfave/cli/v3"
)

func newAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "run the checks a reviewer would ask for before believing an RL result",
		Description: "Each subcommand runs one audit, prints every check with its evidence,\n" +
			"records the result in the ledger, and exits 3 when any check fails.\n\n" + exitCodesHelp,
		Commands: append([]*cli.Command{newAuditWeightsCommand()}, newLedgerAuditCommands()...),
	}
}

func newAuditWeightsCommand() *cli.Command {
	return &cli.Command{
		Name:  "weights",
		Usage: "check that training changed the weights and a No-update control did not",
		Description: "Passes when every check passes:\n" +
			"  trained-changed       at least one element of --trained differs from --base\n" +
			"                        (|a−b| > atol + rtol·|a|); the 5 tensors with the\n" +
			"                        largest ‖Δ‖/‖A‖ are reported;\n" +
			"  noupdate-identical    --noupdate, the run trained with lr = 0, has every\n" +
			"                        tensor digest of --base; every tensor that differs is\n" +
			"                        listed. Without --noupdate this check fails: a change\n" +
			"                        cannot be put down to training without the control;\n" +
			"  evaluated-is-trained  with --evaluated, the model identity an evaluation\n" +
			"                        served is --trained's (any sharding of the same weights\n" +
			"                        has the same identity).\n" +
			"Each checkpoint is a directory or a .safetensors file. The result, with\n" +
			"every checkpoint's manifest, is recorded as an audit.weights entry.\n\n" + exitCodesHelp,
		Flags: append([]cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "base", Required: true, Usage: "the base checkpoint training started from (`DIR|FILE`)"},
			&cli.StringFlag{Name: "trained", Required: true, Usage: "the checkpoint training produced (`DIR|FILE`)"},
			&cli.StringFlag{Name: "noupdate", Usage: "the No-update control, the same run with lr = 0 (`DIR|FILE`)"},
			&cli.StringFlag{Name: "evaluated", Usage: "the model identity an evaluation served (`blake3:HEX`)"},
		}, toleranceFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			tol, err := toleranceFrom(cmd)
			if err != nil {
				return err
			}
			opts := auditWeightsOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Weights: audit.WeightsOptions{
				Base: cmd.String("base"), Trained: cmd.String("trained"), NoUpdate: cmd.String("noupdate"), Tolerance: &tol,
			}}
			if s := cmd.String("evaluated"); s != "" {
				d, err := ledger.ParseDigest(s)
				if err != nil {
					return usagef("--evaluated: %v", err)
				}
				opts.Weights.Evaluated = &d
			}
			_, err = runAuditWeights(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type auditWeightsOptions struct {
	Dir     string
	JSON    bool
	Weights audit.WeightsOptions
}

func runAuditWeights(ctx context.Context, opts auditWeightsOptions, w io.Writer) (*audit.WeightsReport, error) {
	r, err := audits.Weights(ctx, opts.Dir, opts.Weights)
	if err != nil {
		return nil, err
	}
	return r, emitChecked(w, opts.JSON, r, func(w io.Writer) error { return audits.WriteWeights(w, r) }, audits.WeightsFailure(r))
}

func newLedgerAuditCommands() []*cli.Command {
	var out []*cli.Command
	for _, name := range audit.Audits {
		help := ledgerAuditHelp[name]
		out = append(out, &cli.Command{
			Name:  name,
			Usage: help[0],
			Description: "Reads only the ledger (and files it names, verified against their recorded\n" +
				"digests). Every check, passing or not, is printed with the ledger entries\n" +
				"behind it (rlgate show SEQ), and the report is recorded as an audit." + name + "\n" +
				"entry. Checks:\n" + help[1] + "\n" + exitCodesHelp,
			Flags: append(append([]cli.Flag{jsonFlag()}, subjectsFlags(false)...), auditOptionFlags()...),
			Action: func(ctx context.Context, cmd *cli.Command) error {
				s, err := subjectsFrom(cmd)
				if err != nil {
					return err
				}
				r, err := audits.Ledger(ctx, ledgerDir(cmd), name, s, auditOptionsFrom(cmd, audit.Options{}), cmd.Root().ErrWriter)
				if err != nil {
					return err
				}
				return emitChecked(cmd.Root().Writer, cmd.Bool("json"), r, func(w io.Writer) error { return audits.WriteReport(w, r) }, audits.Failure(r))
			},
		})
	}
	return out
}
