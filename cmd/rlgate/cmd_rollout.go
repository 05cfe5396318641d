package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
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
		Flags:       append([]cli.Flag{jsonFlag}, rolloutFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			o, err := rolloutOptionsFrom(cmd)
			if err != nil {
				return err
			}
			_, err = runRollout(ctx, o, cmd.Root().Writer)
			return err
		},
	}
}

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
// rolloutOptionsFrom.
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
	}
}

// rolloutOptions is the rollout command line, parsed.
type rolloutOptions struct {
	Dir            string // ledger
	JSON           bool
	Tasks          string
	DBRoot         string
	Endpoints      []string
	Model          string
	ModelIdentity  *ledger.Digest
	APIKeyEnv      string
	Protocol       string // file; empty: the built-in protocol
	Sampling       rollout.SamplingOverride
	Concurrency    int
	Run            string
	Limit          int
	RequestTimeout time.Duration
	MaxAttempts    int
	Progress       io.Writer // where progress goes; nil: nowhere
}

// rolloutOptionsFrom parses rolloutFlags; a command with fewer of them
// (synth) gets the zero value of each flag it lacks.
func rolloutOptionsFrom(cmd *cli.Command) (rolloutOptions, error) {
	o := rolloutOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"),
		Endpoints: cmd.StringSlice("endpoint"), Model: cmd.String("model"), APIKeyEnv: cmd.String("api-key-env"), Protocol: cmd.String("protocol"),
		Concurrency: cmd.Int("concurrency"), Run: cmd.String("run"), Limit: cmd.Int("limit"), RequestTimeout: cmd.Duration("request-timeout"),
		MaxAttempts: cmd.Int("max-attempts"), Progress: cmd.Root().ErrWriter}
	if s := cmd.String("model-identity"); s != "" {
		d, err := ledger.ParseDigest(s)
		if err != nil {
			return o, usagef("--model-identity: %v", err)
		}
		o.ModelIdentity = &d
	}
	if cmd.IsSet("n") {
		n := cmd.Int("n")
		o.Sampling.N = &n
	}
	if cmd.IsSet("temperature") {
		v := cmd.Float("temperature")
		o.Sampling.Temperature = &v
	}
	if cmd.IsSet("top-p") {
		v := cmd.Float("top-p")
		o.Sampling.TopP = &v
	}
	if cmd.IsSet("seed") {
		v := cmd.Int64("seed")
		o.Sampling.Seed = &v
	}
	switch {
	case o.Concurrency < 1:
		return o, usagef("--concurrency %d: want at least 1", o.Concurrency)
	case o.Limit < 0:
		return o, usagef("--limit %d: want 0 (all tasks) or more", o.Limit)
	case o.RequestTimeout <= 0:
		return o, usagef("--request-timeout %s: want a positive duration", o.RequestTimeout)
	case o.MaxAttempts < 1:
		return o, usagef("--max-attempts %d: want at least 1", o.MaxAttempts)
	}
	return o, nil
}

func runRollout(ctx context.Context, o rolloutOptions, w io.Writer) (*rollout.Summary, error) {
	l, err := ledger.Open(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	ro, src, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if _, err := checkTaskDatabases(ctx, src, false, o.Progress); err != nil {
		return nil, err
	}
	s, err := rollout.Run(ctx, l, ro)
	if s == nil {
		return nil, err
	}
	if perr := emit(w, o.JSON, s, func(w io.Writer) error { printRolloutSummary(w, s); return nil }); err == nil {
		err = perr
	}
	return s, err
}

// resolve reads the protocol and the tasks and fills rollout.Options.
func (o *rolloutOptions) resolve() (rollout.Options, *dataset.TaskSource, error) {
	p := rollout.DefaultProtocol()
	if o.Protocol != "" {
		var err error
		if p, err = rollout.LoadProtocol(o.Protocol); err != nil {
			return rollout.Options{}, nil, err
		}
	}
	if err := o.Sampling.Apply(&p); err != nil {
		return rollout.Options{}, nil, usagef("sampling flags: %v", err)
	}
	ts, err := dataset.LoadTasks(o.Tasks, o.DBRoot, o.Limit)
	if errors.Is(err, dataset.ErrTaskSource) {
		return rollout.Options{}, nil, usagef("%v", err)
	}
	if err != nil {
		return rollout.Options{}, nil, err
	}
	var key string
	if o.APIKeyEnv != "" {
		if key = os.Getenv(o.APIKeyEnv); key == "" {
			return rollout.Options{}, nil, fmt.Errorf("rollout: environment variable %s (--api-key-env) is empty. Try: export %s=...", o.APIKeyEnv, o.APIKeyEnv)
		}
	}
	dbRoot := ts.DBRoot
	progress, terminal := o.Progress, isTerminal(o.Progress)
	return rollout.Options{Run: o.Run, Tasks: ts.Tasks, TasksPath: ts.Path, TasksDigest: ts.Digest, DBRoot: dbRoot,
		DBPath: func(id string) string { return dataset.DBPath(dbRoot, id) }, Endpoints: o.Endpoints, Model: o.Model, ModelIdentity: o.ModelIdentity, APIKey: key,
		Protocol: p, Concurrency: o.Concurrency, Client: rollout.ClientOptions{RequestTimeout: o.RequestTimeout, MaxAttempts: o.MaxAttempts},
		Progress: progress, Terminal: terminal}, ts, nil
}

// isTerminal reports whether w is a terminal, where a progress bar can be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func printRolloutSummary(w io.Writer, s *rollout.Summary) {
	want := s.Tasks * s.Samples
	switch s.Status {
	case "complete":
		fmt.Fprintf(w, "rlgate: rollout %s is complete: %d episodes recorded; nothing to do\n", s.Run, s.Episodes)
	case "interrupted":
		fmt.Fprintf(w, "rlgate: rollout %s interrupted: %d of %d episodes recorded. Run the same command again to resume.\n", s.Run, s.Episodes, want)
	case "failed":
		fmt.Fprintf(w, "rlgate: rollout %s failed: %d of %d episodes finished, %d unfinished (%d played now). Run the same command again to play the unfinished ones.\n",
			s.Run, s.Episodes, want, s.Unfinished, s.Ran)
	default:
		verb := "ran"
		if s.Resumed {
			verb = "resumed"
		}
		fmt.Fprintf(w, "rlgate: rollout %s %s: %d of %d episodes recorded (%d played now, %d found recorded) in %.1fs, %.1f episodes/s\n",
			s.Run, verb, s.Episodes, want, s.Ran, s.Skipped, s.DurationS, s.EpisodesPerS)
	}
	reasons := make([]string, 0, len(s.StopReasons))
	for r := range s.StopReasons {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	fmt.Fprint(w, "rlgate: stop reasons:")
	for _, r := range reasons {
		fmt.Fprintf(w, " %s %d", r, s.StopReasons[rollout.StopReason(r)])
	}
	fmt.Fprintf(w, "\nrlgate: tokens in %d, out %d; protocol %s; entries %d..%d\n", s.TokensIn, s.TokensOut, s.ProtocolDigest, s.StartSeq, s.EndSeq)
	if in, out := s.TokensInPerEpisode, s.TokensOutPerEpisode; in != nil && out != nil {
		fmt.Fprintf(w, "rlgate: tokens per episode: in mean %.1f, p50 %.1f, p95 %.1f; out mean %.1f, p50 %.1f, p95 %.1f\n",
			in.Mean, in.P50, in.P95, out.Mean, out.P50, out.P95)
	}
	if lat := s.RequestLatencyMS; lat != nil {
		fmt.Fprintf(w, "rlgate: request latency over the %d turns played now (retries included): mean %.1f ms, p50 %.1f ms, p95 %.1f ms\n", lat.N, lat.Mean, lat.P50, lat.P95)
	}
	if len(s.Endpoints) < 2 {
		return // one endpoint: the lines above say it all
	}
	for _, e := range s.Endpoints {
		fmt.Fprintf(w, "rlgate: endpoint %s: %d requests, %d transport failures, %d retries", e.Endpoint, e.Requests, e.Failures, e.Retries)
		if lat := e.LatencyMS; lat != nil {
			fmt.Fprintf(w, "; latency p50 %.1f ms, p95 %.1f ms", lat.P50, lat.P95)
		}
		if e.Drained {
			fmt.Fprintf(w, "; DRAINED after %d failures in a row (last: %s)", rollout.DrainAfter, e.DrainError)
		}
		fmt.Fprintln(w)
	}
}
