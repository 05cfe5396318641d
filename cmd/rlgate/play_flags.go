package main

import (
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/evaluate"
	"github.com/urfave/cli/v3"
)

// rolloutFlags are the flags of rollout, which eval takes too.
func rolloutFlags() []cli.Flag {
	return append(append([]cli.Flag{
		&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import (or a tasks.jsonl FILE, with --db-root)"},
	}, policyServerFlags()...),
		&cli.IntFlag{Name: "n", HideDefault: true, Usage: "`N` samples per task, each an independent episode (overrides the protocol's sampling.n, 1 when built in)"},
		&cli.FloatFlag{Name: "temperature", HideDefault: true, Usage: "sampling temperature `T` (overrides the protocol's, 0 when built in)"},
		&cli.FloatFlag{Name: "top-p", HideDefault: true, Usage: "nucleus sampling `P` (overrides the protocol's, 1 when built in)"},
		&cli.Int64Flag{Name: "seed", HideDefault: true, Usage: "`SEED`; sample s is requested with SEED+s (overrides the protocol's, 0 when built in)"},
		&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Required: true, Usage: "run `ID`; an interrupted run with this id is resumed"},
		&cli.IntFlag{Name: "limit", HideDefault: true, Usage: "play only the first `K` tasks (default: all)"},
	)
}

// policyServerFlags say which servers play the policy, how they are
// reached and under which protocol: what every command that plays
// episodes (rollout, eval, synth) takes alike, parsed by
// playOptionsFrom.
func policyServerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "db-root", Usage: "`DIR` of the databases (default: the one recorded at import)"},
		&cli.StringSliceFlag{Name: "endpoint", Required: true, Usage: "OpenAI-compatible server `URL`, e.g. http://127.0.0.1:8000/v1; repeat it (or separate URLs with commas) for a fleet of servers of one model"},
		&cli.StringFlag{Name: "model", Required: true, Usage: "model `NAME` the server serves (recorded)"},
		&cli.StringFlag{Name: "model-identity", Usage: "model identity `blake3:HEX` of the checkpoint the server serves (rlgate ckpt digest prints it; recorded for the identity audit); must be the one the server reports, if it reports one"},
		&cli.StringFlag{Name: "api-key-env", Usage: "environment `VAR` holding the API key, sent as a bearer token and never recorded"},
		&cli.StringFlag{Name: "protocol", Usage: "protocol `FILE` (YAML or JSON) over the built-in one; unknown fields are refused"},
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "`C` episodes played at once"},
		&cli.DurationFlag{Name: "request-timeout", Value: rollout.DefaultClientOptions().RequestTimeout, Usage: "`DURATION` one request may take before it is retried"},
		&cli.IntFlag{Name: "max-attempts", Value: rollout.DefaultClientOptions().MaxAttempts, Usage: "`N` attempts of a request before its episode is left unfinished"},
		&cli.DurationFlag{Name: "flush", Value: rollout.DefaultFlushEvery, Usage: "send finished episodes to the ledger at least every `DURATION` (bounds what a crash can lose)"},
	}
}

// playOptionsFrom parses rolloutFlags; a command with fewer of them
// (synth) gets the zero value of each flag it lacks. The workflow checks
// the values.
func playOptionsFrom(cmd *cli.Command) (evaluate.PlayOptions, error) {
	o := evaluate.PlayOptions{Dir: ledgerDir(cmd), Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"),
		Endpoints: cmd.StringSlice("endpoint"), Model: cmd.String("model"), APIKeyEnv: cmd.String("api-key-env"), Protocol: cmd.String("protocol"),
		Concurrency: cmd.Int("concurrency"), Run: cmd.String("run"), Limit: cmd.Int("limit"), RequestTimeout: cmd.Duration("request-timeout"),
		MaxAttempts: cmd.Int("max-attempts"), FlushEvery: cmd.Duration("flush"), Progress: cmd.Root().ErrWriter, Terminal: isTerminal(cmd.Root().ErrWriter)}
	if s := cmd.String("model-identity"); s != "" {
		d, err := ledger.ParseDigest(s)
		if err != nil {
			return o, usagef("--model-identity: %v", err)
		}
		o.ModelIdentity = &d
	}
	o.Sampling.N = pointerIfSet(cmd, "n", cmd.Int)
	o.Sampling.Temperature = pointerIfSet(cmd, "temperature", cmd.Float)
	o.Sampling.TopP = pointerIfSet(cmd, "top-p", cmd.Float)
	o.Sampling.Seed = pointerIfSet(cmd, "seed", cmd.Int64)
	return o, nil
}
