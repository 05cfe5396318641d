package main

import (
	"context"
	"fmt"
	"strings"

	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/workflow/demo"
	"github.com/urfave/cli/v3"
)

func newDemoCommand() *cli.Command {
	var injects []string
	for _, in := range labdemo.Injects {
		injects = append(injects, fmt.Sprintf("  %-15s gate must fail on %s", in.Name, in.Check))
	}
	return &cli.Command{
		Name:  "demo",
		Usage: "run the whole pipeline on an embedded benchmark with a CPU policy, then gate it",
		Description: "Unpacks the Spider dev benchmark carried in the binary into --dir, split by\n" +
			"database into sft, rl and eval parts, writes rlgate.yaml and gate.yaml\n" +
			"there, and runs the pipeline as rlgate repro does, each stage a command\n" +
			"of this same binary recorded in DIR/.rlgate: import, cold-start synthesis\n" +
			"(the Base reference policy served by rlgate serve-policy, sampled by\n" +
			"rlgate synth), SFT, RL stage 1 (GRPO), RL stage 2 (with a KL term to\n" +
			"stage 1), the No-update control (RL stage 1's recipe from its own input,\n" +
			"the SFT model, with lr = 0), evaluations of Base, SFT, RL\n" +
			"and No-update on the eval part under one protocol, every audit and the\n" +
			"gate. Then it writes the report into DIR/report and prints the\n" +
			"comparison, the gate's verdict and the report's path. Open rlgate.yaml to\n" +
			"see every command; rlgate repro in DIR runs it again.\n\n" +
			"A DIR that exists and is not empty is never touched without --force.\n" +
			"The demo lists every file it writes, with its digest, and its ledger's\n" +
			"last entry in DIR/" + labdemo.ManifestFile + "; --force deletes those files\n" +
			"and the ledger, and only when DIR holds nothing else: a file the list\n" +
			"lacks or that changed since, or a ledger entry added after the demo's,\n" +
			"is named and nothing is deleted.\n\n" +
			"--inject runs a deliberately broken variant that the gate must reject:\n" +
			strings.Join(injects, "\n") + "\n" +
			"(wrong-db is caught by rlgate run's pre-flight before RL stage 1 starts.)\n" +
			"It exits 3 when the gate or a pre-flight check fails.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "dir", Value: "rlgate-demo", Usage: "demo `DIR` (its own ledger is DIR/.rlgate)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "`SEED` of initialisation, sampling and training"},
			&cli.BoolFlag{Name: "force", Usage: "replace an earlier demo's files in DIR when it holds nothing else"},
			&cli.StringFlag{Name: "inject", Usage: "`DEFECT` to inject: leak, noupdate-drift, budget or wrong-db"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o := demo.Options{Dir: cmd.String("dir"), Seed: cmd.Int64("seed"), Force: cmd.Bool("force"), Inject: cmd.String("inject"), Progress: cmd.Root().Writer}
			if cmd.Bool("json") {
				o.Progress = cmd.Root().ErrWriter
			}
			s, err := demo.Run(ctx, o)
			if s != nil {
				if perr := emit(cmd, s, s.WriteText); perr != nil {
					return perr
				}
			}
			return err
		},
	}
}
