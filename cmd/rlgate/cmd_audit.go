package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

func newAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "run the checks a reviewer would ask for before believing an RL result",
		Description: "Each subcommand runs one audit, prints every check with its evidence,\n" +
			"records the result in the ledger, and exits 3 when any check fails.\n\n" + exitCodesHelp,
		Commands: []*cli.Command{newAuditWeightsCommand()},
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
		Flags: append([]cli.Flag{jsonFlag,
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
	l, err := ledger.Open(ctx, opts.Dir) // before hashing, which can take minutes
	if err != nil {
		return nil, err
	}
	defer l.Close()
	r, err := audit.AuditWeights(ctx, opts.Weights)
	if err != nil {
		return nil, err
	}
	if err := r.Record(ctx, l); err != nil {
		return nil, err
	}
	err = emit(w, opts.JSON, r, func(w io.Writer) error { return printWeights(w, r) })
	if err == nil && !r.OK {
		err = checkFailed{fmt.Sprintf("audit weights: %d of %d checks failed (entry %d)", r.Failed, len(r.Findings), r.Seq)}
	}
	return r, err
}

func printWeights(w io.Writer, r *audit.WeightsReport) error {
	t := newTable(w, "checkpoint", "model identity", "tensors", "bytes", "path")
	for _, c := range []struct {
		role string
		c    *audit.WeightsCheckpoint
	}{{"base", &r.Base}, {"trained", &r.Trained}, {"noupdate", r.NoUpdate}} {
		if c.c != nil {
			t.Append(c.role, c.c.Identity.String(), fmt.Sprint(c.c.Tensors), fmt.Sprint(c.c.Size), c.c.Path)
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, f := range r.Findings {
		verdict := "PASS"
		if !f.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", verdict, f.Check, f.Message)
		if ev, ok := f.Evidence.(audit.ChangeEvidence); ok && len(ev.Top) > 0 {
			t := newTable(w, "most changed tensor", "changed", "max |Δ|", "‖Δ‖/‖A‖")
			for _, d := range ev.Top {
				t.Append(d.Name, fmt.Sprintf("%d of %d", d.Changed, d.Elements), fmt.Sprintf("%.4g", d.MaxAbsDelta), audit.FormatRelChange(d.RelL2Delta))
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
	}
	verdict := "passed"
	if !r.OK {
		verdict = fmt.Sprintf("failed %d of %d checks", r.Failed, len(r.Findings))
	}
	_, err := fmt.Fprintf(w, "weights audit %s; recorded as entry %d\n", verdict, r.Seq)
	return err
}
