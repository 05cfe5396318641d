package main

import (
	"context"
	"errors"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/workflow/data"
	"github.com/urfave/cli/v3"
)

func newDataRenderCommand() *cli.Command {
	return &cli.Command{
		Name:  "render",
		Usage: "render each task's prompt as the protocol shows it to a policy (the seeds' rl2sft step)",
		Description: "Fills the protocol's system and user templates from each task's schema\n" +
			"({db_details}), external knowledge ({external_knowledge}, the protocol's\n" +
			"no_knowledge when there is none) and question ({question}), with the renderer\n" +
			"rollout, synth and export rl use, so a prompt rendered here is byte for byte\n" +
			"the one an evaluation sends. --drop-examples leaves the protocol's example\n" +
			"block ({examples}, prompt.examples) out, as the seeds' rl2sft step does.\n" +
			"Writes one JSON line per task: {\"id\", \"db_id\", \"messages\": [{\"role\":\n" +
			"\"system\", \"content\"}, {\"role\": \"user\", \"content\"}]}, in task order, and\n" +
			"records the file as an artifact with its digest and the digests of the tasks\n" +
			"and the protocol.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import (or a tasks.jsonl FILE)"},
			&cli.StringFlag{Name: "protocol", Usage: "protocol `FILE` (YAML or JSON) over the built-in one"},
			&cli.BoolFlag{Name: "drop-examples", Usage: "render {examples} empty"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "JSON lines `FILE` to write"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			s, err := data.Render(ctx, ledgerDir(cmd), data.RenderOptions{Tasks: cmd.String("tasks"), Protocol: cmd.String("protocol"),
				DropExamples: cmd.Bool("drop-examples"), Out: cmd.String("out")})
			if errors.Is(err, dataset.ErrTaskSource) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			return emit(cmd, s, s.WriteText)
		},
	}
}
