// The flags that name what the ledger audits, the gate and the report
// look at, and tune the audits, shared by those commands.

package main

import (
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/urfave/cli/v3"
)

// subjectsFlags name what a ledger audit or the gate looks at.
func subjectsFlags(required bool) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "runs", Required: required, Usage: "grading runs `LABEL=RUN,...` (base, sft, rl, noupdate), as rlgate eval recorded them"},
		&cli.StringFlag{Name: "train", Usage: "training stage runs `LABEL=RUN,...` (sft, rl, noupdate), as rlgate run recorded them"},
	}
}

// auditOptionFlags tune the ledger audits, each held to the range a policy
// file's option of the same name has (docs/GATE.md).
func auditOptionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.FloatFlag{Name: "max-kl-growth", Value: audit.DefaultMaxKLGrowth, Usage: "reward: bound `RATIO` on KL growth", Validator: optionRange[float64]("max-kl-growth")},
		&cli.IntFlag{Name: "self-grade-sample", Value: audit.DefaultSelfGradeSample, Usage: "reward: `N` gold queries graded against themselves", Validator: optionRange[int]("self-grade-sample")},
		&cli.IntFlag{Name: "gold-substring", Value: audit.DefaultGoldSubstring, Usage: "gold: fragment length `L` in normalised characters", Validator: optionRange[int]("gold-substring")},
		&cli.FloatFlag{Name: "near-duplicate", Value: audit.DefaultNearDuplicate, Usage: "split: bigram Jaccard `J` from which questions are the same", Validator: optionRange[float64]("near-duplicate")},
		&cli.BoolFlag{Name: "split-by-database", Usage: "split: train and eval must share no database"},
		&cli.IntFlag{Name: "mutate", Usage: "gold: re-play `K` sampled tasks of each evaluation beside a mutated gold", Validator: optionRange[int]("mutate")},
		&cli.StringFlag{Name: "mutate-endpoint", Usage: "gold: re-play against this live endpoint `URL` at temperature 0 instead of the recorded replies", Validator: optionRange[string]("mutate-endpoint")},
	}
}

// optionRange checks the flag --name against the range of the policy
// option it sets (name with _ for -).
func optionRange[T any](name string) func(T) error {
	key := strings.ReplaceAll(name, "-", "_")
	return func(v T) error { return audit.CheckOption(key, v) }
}

// subjectsFrom reads --runs and --train.
func subjectsFrom(cmd *cli.Command) (audit.Subjects, error) {
	var s audit.Subjects
	var err error
	if v := cmd.String("runs"); v != "" {
		if s.Runs, err = parseLabels("runs", v); err != nil {
			return s, err
		}
	}
	if v := cmd.String("train"); v != "" {
		if s.Train, err = parseLabels("train", v); err != nil {
			return s, err
		}
	}
	return s, nil
}

// auditOptionsFrom reads the flags of auditOptionFlags that were given
// over base.
func auditOptionsFrom(cmd *cli.Command, base audit.Options) audit.Options {
	ifSet(cmd, "max-kl-growth", cmd.Float, &base.MaxKLGrowth)
	ifSet(cmd, "self-grade-sample", cmd.Int, &base.SelfGradeSample)
	ifSet(cmd, "gold-substring", cmd.Int, &base.GoldSubstring)
	ifSet(cmd, "near-duplicate", cmd.Float, &base.NearDuplicate)
	ifSet(cmd, "split-by-database", cmd.Bool, &base.SplitByDatabase)
	ifSet(cmd, "mutate", cmd.Int, &base.Mutate)
	ifSet(cmd, "mutate-endpoint", cmd.String, &base.MutateEndpoint)
	return base
}

// parseLabels reads the LABEL=RUN,... value of flag --name, the spaces
// around labels and run ids trimmed (audit.AddLabeledRun).
func parseLabels(name, s string) ([]audit.LabeledRun, error) {
	var out []audit.LabeledRun
	for _, part := range strings.Split(s, ",") {
		label, run, ok := strings.Cut(part, "=")
		if !ok {
			return nil, usagef("--%s: %q is not LABEL=RUN", name, strings.TrimSpace(part))
		}
		var err error
		if out, err = audit.AddLabeledRun(out, label, run); err != nil {
			return nil, usagef("--%s: %v", name, err)
		}
	}
	return out, nil
}
