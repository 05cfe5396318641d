package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stats"
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
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "runs", Required: true, Usage: "`LABEL=RUN,...`, e.g. base=eval-base,sft=eval-sft,rl=eval-rl"},
			&cli.StringFlag{Name: "baseline", Usage: "`LABEL` the others are compared with (default: the first)"},
			&cli.FloatFlag{Name: "alpha", Value: stats.DefaultAlpha, Usage: "significance level"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "bootstrap `SEED` (recorded)"},
			&cli.IntFlag{Name: "resamples", Value: stats.DefaultResamples, Usage: fmt.Sprintf("bootstrap resamples `B` (at least %d)", stats.MinResamples)},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			runs, err := parseLabeledRuns(cmd.String("runs"))
			if err != nil {
				return err
			}
			if err := checkFlags(alphaFlag(cmd), countFlag(cmd, "resamples", stats.MinResamples, math.MaxInt)); err != nil {
				return err
			}
			if b := cmd.String("baseline"); b != "" && !slices.ContainsFunc(runs, func(r audit.LabeledRun) bool { return r.Label == b }) {
				return usagef("--baseline %q: want one of the labels in --runs", b)
			}
			opts := audit.CompareOptions{Runs: runs, Baseline: cmd.String("baseline"), Alpha: cmd.Float("alpha"), Seed: cmd.Uint64("seed"), B: int(cmd.Int("resamples")), ByDifficulty: true}
			_, err = runCompare(ctx, ledgerDir(cmd), opts, cmd.Bool("json"), cmd.Root().Writer)
			return err
		},
	}
}

func runCompare(ctx context.Context, dir string, opts audit.CompareOptions, asJSON bool, w io.Writer) (*audit.Comparison, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	c, err := audit.Compare(ctx, l, opts)
	if err != nil {
		return nil, err
	}
	if err := c.Record(ctx, l); err != nil {
		return nil, err
	}
	return c, emit(w, asJSON, c, func(w io.Writer) error { return printComparison(w, c) })
}

func printComparison(w io.Writer, c *audit.Comparison) error {
	level := fmt.Sprintf("%g%%", 100*(1-c.Alpha))
	t := newTable(w, "model", "run", "correct", "accuracy", "Wilson "+level+" CI")
	for _, m := range c.Models {
		t.Append(m.Label, m.Run, fmt.Sprintf("%d/%d", m.Correct, m.N), fmt.Sprintf("%.4f", m.Accuracy), fmt.Sprintf("[%.4f, %.4f]", m.Wilson.Lo, m.Wilson.Hi))
	}
	if err := t.Render(); err != nil {
		return err
	}
	t = newTable(w, "comparison", "Δ accuracy", "bootstrap "+level+" CI", "b", "c", "McNemar exact p", "Holm p", fmt.Sprintf("MDE (%g%% power)", 100*c.Power))
	for _, p := range c.Pairs {
		t.Append(p.Label+" vs "+p.Baseline, fmt.Sprintf("%+.4f", p.Delta),
			fmt.Sprintf("[%+.4f, %+.4f]", p.Bootstrap.Percentile.Lo, p.Bootstrap.Percentile.Hi),
			fmt.Sprint(p.B), fmt.Sprint(p.C), fmt.Sprintf("%.4g", p.McNemar.ExactP), fmt.Sprintf("%.4g", p.HolmP), fmt.Sprintf("%.4f", p.MDE))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := printByDifficulty(w, c); err != nil {
		return err
	}
	recorded := fmt.Sprintf("recorded as entry %d", c.Seq)
	if c.Seq == 0 {
		recorded = "not recorded" // rlgate demo shows what its compare stage recorded
	}
	_, err := fmt.Fprintf(w, "%d paired tasks (task set %s); bootstrap B=%d, seed %d; %s\n", c.Tasks, c.TaskSet, c.B, c.Seed, recorded)
	return err
}

// printByDifficulty prints the comparison's breakdown by difficulty
// level, one row per level: tasks, each run's correct count, and b, c and
// Δ of each run against the baseline.
func printByDifficulty(w io.Writer, c *audit.Comparison) error {
	if len(c.ByDifficulty) == 0 {
		return nil
	}
	head := []any{"difficulty", "tasks"}
	for _, m := range c.Models {
		head = append(head, m.Label+" correct")
	}
	for _, p := range c.Pairs {
		head = append(head, p.Label+" b", p.Label+" c", p.Label+" Δ")
	}
	if _, err := fmt.Fprintf(w, "by difficulty (b, c and Δ against %s):\n", c.Baseline); err != nil {
		return err
	}
	t := newTable(w, head...)
	for _, d := range c.ByDifficulty {
		row := []any{d.Difficulty, d.Tasks}
		for _, m := range c.Models {
			row = append(row, d.Correct[m.Label])
		}
		for _, p := range d.Pairs {
			row = append(row, p.B, p.C, fmt.Sprintf("%+.4f", p.Delta))
		}
		t.Append(row...)
	}
	return t.Render()
}
