package main

import (
	"context"

	"github.com/rlgate/rlgate/workflow/serve"
	"github.com/urfave/cli/v3"
)

func newServeReplayCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve-replay",
		Usage: "serve a recorded rollout as an OpenAI-compatible endpoint that replays its replies",
		Description: "Loads every episode of --run and answers POST /v1/chat/completions with the\n" +
			"recorded response (status and body byte for byte) of the same task, sample and\n" +
			"turn: the episode is named by the request's user field (\"<task id>#<sample>\",\n" +
			"which rlgate rollout sends) and the turn by the number of assistant messages\n" +
			"in the request. A (task, sample) is served its finished episode, or else its\n" +
			"last unfinished one, whose transport failure (a dropped connection, a 5xx) is\n" +
			"served again. A rollout over the same tasks with the same protocol and model\n" +
			"against this endpoint reproduces the recorded run; the response header\n" +
			"X-Rlgate-Replay says whether each request matched the recorded one exactly.\n" +
			"GET /v1/models reports the run's model identity when the endpoint it was\n" +
			"recorded against reported it (source server), not one only asserted.\n" +
			"A request outside the recording gets 404. Serves until interrupted (Ctrl-C).\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "run", Required: true, Usage: "rollout run `ID` to replay"},
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8100", Usage: "`HOST:PORT` to listen on (port 0: any free port)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return serve.ServeReplay(ctx, ledgerDir(cmd), cmd.String("run"), cmd.String("addr"), cmd.Bool("json"), cmd.Root().Writer)
		},
	}
}
