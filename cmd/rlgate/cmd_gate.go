package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/workflow/gate"
	"github.com/urfave/cli/v3"
)

func newGateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "run every audit and test every claim; one verdict, exit 0 or 3",
		Description: "Runs the policy's audits (gold, split, budget, reward, training, identity)\n" +
			"over the labelled runs and tests each claim (A > B) on the paired greedy\n" +
			"outcomes: the paired bootstrap interval of the accuracy difference must lie\n" +
			"above 0 and McNemar's exact p, Holm-adjusted across the claims, below alpha;\n" +
			"the minimum detectable effect is printed beside every claim. Prints one table\n" +
			"of checks with the ledger entries behind each (rlgate show SEQ), records every\n" +
			"audit and comparison, then a gate.verdict entry bound to the rl model identity\n" +
			"and the ledger head it was decided on, and exits 0 when every check passes.\n\n" +
			"The built-in policy (paper-grade) claims rl > base, rl > noupdate and\n" +
			"sft > base with every audit at alpha 0.05; when the rl run descends from the\n" +
			"sft run's output (RL after SFT) it is paper-grade-sft instead, claiming\n" +
			"rl > sft, rl > noupdate and sft > base. Claims that compare the same two\n" +
			"evaluations are refused. --policy FILE reads a YAML policy\n" +
			"of the same shape (name, claims, audits, alpha, resamples, seed, power,\n" +
			"options, runs, train; unknown fields are refused); --runs and --train\n" +
			"override the runs it names. A run may be named by its stage (rl: rl2): the\n" +
			"stage's latest run that ended ok, printed and recorded in the verdict.\n" +
			"--junit FILE writes each check as a JUnit test\n" +
			"case for CI systems. --dry-run decides the same way but records nothing and\n" +
			"opens the ledger read-only, so it runs on a ledger the user cannot write.\n\n" +
			"A recorded verdict bound to a model acts on the publish requests waiting for\n" +
			"that model (rlgate run --publish-to): it publishes them if it passed, and\n" +
			"says they are withheld if it failed (docs/PUBLISH.md).\n\n" + exitCodesHelp,
		Flags: append(append([]cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "policy", Usage: "YAML policy `FILE` (default: the built-in paper-grade policy)"},
			&cli.StringFlag{Name: "junit", Usage: "write the checks as JUnit XML to `FILE`"},
			&cli.BoolFlag{Name: "dry-run", Usage: "decide, record nothing, open the ledger read-only"},
		}, subjectsFlags(false)...), auditOptionFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := subjectsFrom(cmd)
			if err != nil {
				return err
			}
			p, err := gate.Policy(cmd.String("policy"), s, func(o audit.Options) audit.Options { return auditOptionsFrom(cmd, o) })
			if err != nil {
				return err
			}
			_, err = runGate(ctx, gateOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), JUnit: cmd.String("junit"), Policy: p,
				DryRun: cmd.Bool("dry-run")}, cmd.Root().Writer)
			return err
		},
	}
}

type gateOptions struct {
	Dir    string
	JSON   bool
	JUnit  string // file; empty: none
	Policy audit.Policy
	// DryRun records nothing and opens the ledger read-only.
	DryRun bool
}

func runGate(ctx context.Context, o gateOptions, w io.Writer) (*audit.Verdict, error) {
	r, err := gate.Decide(ctx, o.Dir, o.Policy, o.DryRun, o.JUnit)
	if r == nil {
		return nil, err
	}
	if perr := emitChecked(w, o.JSON, r, r.WriteText, r.Failure()); err == nil {
		err = perr
	}
	return r.Verdict, err
}
