package main

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/workflow/evaluate"
	"github.com/urfave/cli/v3"
)

const synthHelp = "Cold-start synthesis, as the seeds' Stage 0: samples a teacher model\n" +
	"--samples-per-question times on each question (all of --tasks, or --num-examples\n" +
	"of them chosen under --seed: the lowest BLAKE3 ranks of seed and task id, kept\n" +
	"in file order), keeps the trajectories whose final SQL passes execution match,\n" +
	"and writes into --out:\n\n" +
	"  trajectories.jsonl  one kept trajectory a line: db_id, example_id, sample_id,\n" +
	"                      system, base_prompt, turns[] (turn, think, sql,\n" +
	"                      observation, solution, is_final); no gold\n" +
	"  gold.jsonl          example_id, db_id, gold_sql of each example with a kept\n" +
	"                      trajectory, for those who need it\n" +
	"  example_ids.json    the sampled example ids, which rlgate export rl --exclude\n" +
	"                      keeps out of the RL data\n\n" +
	"The sampling is a rollout run (the protocol, ledger records and endpoint checks\n" +
	"of rlgate rollout; sample s is requested with seed --seed+s at --temperature),\n" +
	"the grading a grading run <run>.<metric>-passk1 of the frozen trajectories\n" +
	"(--metric: default spider for a Spider import, bird otherwise), and the files\n" +
	"a synthesis run <run>.synth with each file as an output artifact and its\n" +
	"digest, so that rlgate run --in of the files finds where they came from.\n" +
	"--run defaults to synth-<digest of tasks, sampled set, model and protocol>.\n\n" +
	"Run the same command again after a failure, a crash or Ctrl-C: the rollout\n" +
	"resumes and plays only the episodes it has not finished; a recorded grading\n" +
	"is reused; a synthesis recorded before is written again and must come out\n" +
	"byte-identical.\n\n"

func newSynthCommand() *cli.Command {
	return &cli.Command{
		Name:        "synth",
		Usage:       "sample a teacher model, keep the trajectories that pass execution match (cold-start SFT data)",
		Description: synthHelp + exitCodesHelp,
		Flags: append(append([]cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import (the gold beside the tasks is read after the rollout)"},
		}, policyServerFlags()...),
			&cli.IntFlag{Name: "samples-per-question", Value: 20, Usage: "`N` samples of each question, each an independent episode"},
			&cli.FloatFlag{Name: "temperature", Value: 1, Usage: "sampling temperature `T`"},
			&cli.FloatFlag{Name: "top-p", HideDefault: true, Usage: "nucleus sampling `P` (default: the protocol's, 1 when built in)"},
			&cli.IntFlag{Name: "num-examples", HideDefault: true, Usage: "sample `N` questions under --seed (default: all)"},
			&cli.Int64Flag{Name: "seed", Value: 42, Usage: "`SEED` of the question sample; sample s of a question is requested with SEED+s"},
			&cli.StringFlag{Name: "metric", Usage: "`METRIC` a kept trajectory passes: bird, spider or strict (default: the dataset's)"},
			&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "rollout run `ID` (default: synth-<digest of what fixes the synthesis>)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "`DIR` to write the files into (created when missing; the three files are replaced)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			po, err := playOptionsFrom(cmd)
			if err != nil {
				return err
			}
			o := evaluate.SynthOptions{PlayOptions: po, NumExamples: cmd.Int("num-examples"), Out: cmd.String("out"),
				Metric: grade.Metric(cmd.String("metric"))}
			n, temp, seed := cmd.Int("samples-per-question"), cmd.Float("temperature"), cmd.Int64("seed")
			o.Sampling.N, o.Sampling.Temperature, o.Sampling.Seed = &n, &temp, &seed
			s, err := evaluate.Synth(ctx, o)
			if err != nil {
				if s != nil && s.Rollout != nil && !cmd.Bool("json") {
					evaluate.WriteRollout(cmd.Root().Writer, s.Rollout)
				}
				return err
			}
			return emit(cmd, s, func(w io.Writer) error { return evaluate.WriteSynth(w, s) })
		},
	}
}
