package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stats"
	"github.com/rlgate/rlgate/workflow/audits"
	"github.com/urfave/cli/v3"
)

func newCompareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "compare evaluation runs task by task (Base / SFT / RL / No-update)",
		Description: "Pairs the runs' greedy outcomes by task id (refusing runs over different\n" +
			"tasks, and listing the difference) and prints each run's accuracy with a\n" +
			"Wilson interval and, against the baseline, the difference with a paired\n" +
			"bootstrap interval, the discordant counts b/c, the exact McNemar p, the\n" +
			"Holm-adjusted p across comparisons, and the minimum detectable effect at 80%\n" +
			"power. When the gradings recorded each task's difficulty (Spider's hardness,\n" +
			"BIRD's difficulty), a breakdown by level follows: tasks, each run's correct\n" +
			"count, and against the baseline b, c and Δ (no test per level: a gate claim\n" +
			"on a group, docs/GATE.md, is that test). The comparison, breakdown\n" +
			"included, is recorded in the ledger.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "runs", Required: true, Usage: "`LABEL=RUN,...`, e.g. base=eval-base,sft=eval-sft,rl=eval-rl"},
			&cli.StringFlag{Name: "baseline", Usage: "`LABEL` the others are compared with (default: the first)"},
			&cli.FloatFlag{Name: "alpha", Value: stats.DefaultAlpha, Usage: "significance level"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "bootstrap `SEED` (recorded)"},
			&cli.IntFlag{Name: "resamples", Value: stats.DefaultResamples, Usage: fmt.Sprintf("bootstrap resamples `B` (at least %d)", stats.MinResamples)},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			runs, err := parseLabels("runs", cmd.String("runs"))
			if err != nil {
				return err
			}
			opts := audit.CompareOptions{Runs: runs, Baseline: cmd.String("baseline"), Alpha: cmd.Float("alpha"), Seed: cmd.Uint64("seed"), B: cmd.Int("resamples"), ByDifficulty: true}
			c, err := audits.Compare(ctx, ledgerDir(cmd), opts)
			if err != nil {
				return err
			}
			return emit(cmd, c, func(w io.Writer) error { return audits.WriteComparison(w, c) })
		},
	}
}
