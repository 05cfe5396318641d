package main

import (
	"context"
	"fmt"

	"github.com/rlgate/rlgate/workflow/serve"
	"github.com/urfave/cli/v3"
)

func newServePolicyCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve-policy",
		Usage:     "serve the reference policy (lab/refpolicy) as an OpenAI-compatible endpoint",
		ArgsUsage: "[-- CMD ARGS...]",
		Description: "Loads the checkpoint --ckpt (rlgate train init|sft|grpo writes one) and answers\n" +
			"GET /v1/models and POST /v1/chat/completions (with usage) in the rollout\n" +
			"protocol's <think> / <sql> / <solution> turns: a value probe, up to three\n" +
			"candidate queries checked with <sql>, then the answer. Temperature 0 is\n" +
			"greedy; above 0 the reply is sampled with the request's seed and user field.\n" +
			"It prints the base URL and the model identity (the checkpoint's, as rlgate\n" +
			"ckpt digest prints it) and serves until interrupted (Ctrl-C).\n\n" +
			"With -- CMD ARGS..., it serves while CMD runs, with {endpoint} in ARGS replaced\n" +
			"by the base URL and RLGATE_ENDPOINT and RLGATE_MODEL_IDENTITY set, then stops\n" +
			"and exits with CMD's exit code; stdout is then CMD's alone (the listening line\n" +
			"goes to stderr), so CMD's --json output can be piped; --addr 127.0.0.1:0 takes\n" +
			"any free port:\n" +
			"  rlgate serve-policy --ckpt ckpt/rl --addr 127.0.0.1:0 -- rlgate eval --endpoint {endpoint} ...\n" +
			"CMD is supervised as rlgate run supervises a stage: Ctrl-C sends it SIGTERM,\n" +
			"then SIGKILL 10s later, and it is stopped if rlgate dies.\n\n" +
			exitCodesHelp + " With CMD: CMD's exit code.",
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "ckpt", Required: true, Usage: "checkpoint `DIR` of the reference policy"},
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8200", Usage: "`HOST:PORT` to listen on (port 0: any free port)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			argv := cmd.Args().Slice()
			code, err := serve.Policy(ctx, cmd.String("ckpt"), cmd.String("addr"), cmd.Bool("json"), argv, cmd.Root().Writer, cmd.Root().ErrWriter)
			if err != nil || code == 0 {
				return err
			}
			// CMD's own exit code; 1 when a signal killed it (-1).
			return stageExited{msg: fmt.Sprintf("serve-policy: %s exited %d", argv[0], code), code: max(code, exitError)}
		},
	}
}
