package main

import (
	"context"
	"io"
	"os"

	"github.com/rlgate/rlgate/workflow/evaluate"
	"github.com/urfave/cli/v3"
	"golang.org/x/term"
)

const rolloutHelp = "Plays every task --n times against an OpenAI-compatible /v1/chat/completions\n" +
	"endpoint (vLLM, SGLang, llama.cpp server): the model thinks in <think>,\n" +
	"explores with <sql> (run read-only on the task's database, the result coming\n" +
	"back as an observation) and answers with <solution>, within the protocol's\n" +
	"budgets (6 turns, tokens per turn and per request, 5 SQL executions of 10 s,\n" +
	"3 format corrections; --protocol FILE overrides the built-in one, and --n,\n" +
	"--temperature, --top-p and --seed override its sampling). Every request and\n" +
	"response body, every turn and each episode's stop reason and budget use are\n" +
	"recorded in the ledger under --run, with the protocol's digest. Only public\n" +
	"tasks are read: a tasks file carrying gold fields is refused. The summary\n" +
	"(and --json) describes the tokens per finished episode and the latency of\n" +
	"each turn played now by mean, p50 and p95 (NumPy's linear percentiles).\n\n" +
	"Before anything is recorded, GET <endpoint>/models checks that the endpoint\n" +
	"can be used: no connection, a URL that is not http(s), 401, 403 or a 5xx is\n" +
	"an error naming the cause; any other answer, 404 included, passes. It also\n" +
	"asks which model the endpoint serves: rlgate serve-policy and serve-replay\n" +
	"report the model identity (vLLM, SGLang and llama.cpp report none). An\n" +
	"identity other than --model-identity, or endpoints of a fleet reporting two,\n" +
	"refuse the run (exit 2) before anything is recorded; without --model-identity\n" +
	"the reported one is recorded. The run.start records the identity with its\n" +
	"source: server (reported) or asserted (--model-identity, no endpoint reported\n" +
	"one); the identity audit and the report show which. Transport\n" +
	"failures of a request (connection refused or reset, timeout, 5xx, 429, a reply\n" +
	"that is not a chat completion) are retried up to --max-attempts times; when\n" +
	"every attempt fails, the episode is recorded as unfinished (transport_error)\n" +
	"and the run goes on, then ends failed (exit 1) with the count. A 4xx ends an\n" +
	"episode as finished (http_error), as the model's own failures do.\n\n" +
	"Run the same command again after a failure, a crash or Ctrl-C: the run resumes\n" +
	"and plays only the episodes it has not finished, refused (exit 2) when the\n" +
	"endpoint serves another model identity than the run recorded. A run that\n" +
	"ended ok is reported complete.\n\n" +
	"A fleet: repeat --endpoint (servers of the same model, e.g. several vLLM\n" +
	"instances). Each must pass the probe, or nothing is played. Each request goes\n" +
	"to the endpoint with the fewest requests in flight (ties to the first given).\n" +
	"An endpoint whose requests fail in transport 5 times in a row is drained: it\n" +
	"gets no more requests, those in flight are retried on the others (without\n" +
	"counting against --max-attempts), and it is reported at once and in the\n" +
	"summary. The last endpoint left is never drained: its failures leave episodes\n" +
	"unfinished as above. Requests, transport failures, retries and latency (p50,\n" +
	"p95) of each endpoint are printed and recorded in the run's end entry. A run\n" +
	"may resume on another list of endpoints; the new list is recorded.\n\n"

func newRolloutCommand() *cli.Command {
	return &cli.Command{
		Name:        "rollout",
		Usage:       "play the multi-turn SQL protocol against an OpenAI-compatible endpoint and record every episode",
		Description: rolloutHelp + exitCodesHelp,
		Flags:       append([]cli.Flag{jsonFlag()}, rolloutFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o, err := playOptionsFrom(cmd)
			if err != nil {
				return err
			}
			s, err := evaluate.Rollout(ctx, o)
			if s == nil {
				return err
			}
			// A failed or interrupted run is summarised before its error.
			if perr := emit(cmd, s, func(w io.Writer) error { return evaluate.WriteRollout(w, s) }); err == nil {
				err = perr
			}
			return err
		},
	}
}

// isTerminal reports whether w is a terminal, where a progress bar can be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
