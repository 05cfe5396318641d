package main

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/data"
	"github.com/urfave/cli/v3"
)

const exportHelp = "Every export is deterministic and recorded in the ledger as a run of its\n" +
	"own, export-<kind>-<digest of the outputs> (or --run): its start names the\n" +
	"inputs by digest and the task ids the output holds (a blob the split audit\n" +
	"reads), each file written is an output artifact with its digest, so rlgate\n" +
	"run --in of the file finds the export, and its end lists the digests. The\n" +
	"same export again finds its run and checks the digests (status complete).\n\n"

func newExportCommand() *cli.Command {
	runFlag := &cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "export run `ID` (default: export-<kind>-<digest of the outputs>)"}
	return &cli.Command{
		Name:  "export",
		Usage: "write synthesised trajectories or tasks in a trainer's format, recorded with their digests",
		Commands: []*cli.Command{{
			Name:  "sft",
			Usage: "write rlgate synth's trajectories as an LLaMA-Factory SFT dataset",
			Description: "Writes the trajectories of --from (a directory rlgate synth wrote, or its\n" +
				"trajectories.jsonl) as an LLaMA-Factory dataset: a JSON array, one record a\n" +
				"line, in the trajectories' order. sharegpt: {\"conversations\": [system,\n" +
				"human (the first user message), then gpt (each reply as <think>...</think>\n" +
				"and its <sql> or <solution>) answered by observation (the environment's\n" +
				"message as the policy saw it), ending on gpt]}, every conversation checked\n" +
				"against LLaMA-Factory's alternation rule. alpaca: {instruction, input,\n" +
				"output, system, history}, the final reply as output and the earlier\n" +
				"exchanges as history. The entry <file name without extension> is set in\n" +
				"the dataset_info.json beside --out (other entries are kept), naming the\n" +
				"columns and tags so that LLaMA-Factory relies on no default.\n\n" + exportHelp + exitCodesHelp,
			Flags: []cli.Flag{jsonFlag(),
				&cli.StringFlag{Name: "from", Required: true, Usage: "`DIR` rlgate synth wrote (or its trajectories.jsonl)"},
				&cli.StringFlag{Name: "format", Required: true, Usage: "`FORMAT`: sharegpt or alpaca"},
				&cli.StringFlag{Name: "out", Required: true, Usage: "dataset `FILE` to write (e.g. data/sql_sft.json)"},
				runFlag},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				o := export.SFTOptions{From: cmd.String("from"), Format: cmd.String("format"), Out: cmd.String("out"), Run: cmd.String("run")}
				if !slices.Contains(export.SFTFormats, o.Format) {
					return usagef("--format %q: want %s", o.Format, strings.Join(export.SFTFormats, " or "))
				}
				s, err := data.ExportSFT(ctx, ledgerDir(cmd), o)
				return printExport(cmd, s, err)
			},
		}, {
			Name:  "rl",
			Usage: "write a dataset's tasks, less the SFT questions, as RL training data",
			Description: "Writes the tasks of --tasks (a directory rlgate data import wrote) with\n" +
				"the gold as ground truth, leaving out every id of --exclude (the\n" +
				"example_ids.json rlgate synth wrote), so RL never trains on the SFT\n" +
				"questions. The prompt is [system, user] as the protocol (--protocol FILE,\n" +
				"default the built-in one) renders them for a rollout. Formats:\n\n" +
				"  skyrl-parquet  SkyRL's text2sql data: data_source, prompt\n" +
				"                 (list<struct<role,content>>), env_class \"text2sql\",\n" +
				"                 reward_spec {method \"rule\", ground_truth}, db_id, data\n" +
				"                 (spider or bird: the database collection skyrl-gym's SQL\n" +
				"                 env looks in)\n" +
				"  verl-parquet   veRL's RLHF dataset: data_source, prompt, ability,\n" +
				"                 reward_model {style \"rule\", ground_truth}, extra_info\n" +
				"                 {split, index, example_id, db_id, data}\n" +
				"  jsonl          the skyrl-parquet row as JSON lines\n\n" +
				"Parquet is written uncompressed, one row group. The run records the\n" +
				"exclusion (path, digest, ids, how many were left out) beside the digests\n" +
				"of tasks, gold and the file written, which the split audit's\n" +
				"sft-rl-disjoint check reads.\n\n" + exportHelp + exitCodesHelp,
			Flags: []cli.Flag{jsonFlag(),
				&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import"},
				&cli.StringFlag{Name: "exclude", Usage: "example_ids.json `FILE` whose ids are left out, or the DIR rlgate synth wrote (default: none)"},
				&cli.StringFlag{Name: "format", Required: true, Usage: "`FORMAT`: skyrl-parquet, verl-parquet or jsonl"},
				&cli.StringFlag{Name: "protocol", Usage: "protocol `FILE` (YAML or JSON) over the built-in one, whose prompts are rendered"},
				&cli.StringFlag{Name: "out", Required: true, Usage: "`FILE` to write"},
				runFlag},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				o := export.RLOptions{Tasks: cmd.String("tasks"), Exclude: cmd.String("exclude"), Format: cmd.String("format"), Out: cmd.String("out"),
					Run: cmd.String("run"), Protocol: rollout.DefaultProtocol()}
				if !slices.Contains(export.RLFormats, o.Format) {
					return usagef("--format %q: want %s", o.Format, strings.Join(export.RLFormats, ", "))
				}
				if p := cmd.String("protocol"); p != "" {
					var err error
					if o.Protocol, err = rollout.LoadProtocol(p); err != nil {
						return err
					}
				}
				s, err := data.ExportRL(ctx, ledgerDir(cmd), o)
				return printExport(cmd, s, err)
			},
		}},
	}
}

// printExport prints an export's summary, or returns its error.
func printExport(cmd *cli.Command, s *export.Summary, err error) error {
	if err != nil {
		return err
	}
	return emit(cmd, s, func(w io.Writer) error { return data.WriteExport(w, s) })
}
