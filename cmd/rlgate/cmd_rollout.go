package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/tasks"
	"github.com/urfave/cli/v3"
)

const rolloutHelp = "Plays every task --n times against an OpenAI-compatible /v1/chat/completions\n" +
	"endpoint (vLLM, SGLang, llama.cpp server): the model thinks in <think>,\n" +
	"explores with <sql> (run read-only on the task's database, the result coming\n" +
	"back as an observation) and answers with <solution>, within the protocol's\n" +
	"budgets (6 turns, tokens per turn and per request, 5 SQL executions of 10 s,\n" +
	"3 format corrections; --protocol FILE overrides the built-in one, and --n,\n" +
	"--temperature, --top-p and --seed override its sampling). Every request and\n" +
	"response body, every turn and each episode's stop reason and budget use are\n" +
	"recorded in the ledger under --run, with the protocol's digest. Transient\n" +
	"endpoint failures are retried; a 4xx or repeated failure ends that episode\n" +
	"(http_error) and the run goes on. Only public tasks are read: a tasks file\n" +
	"carrying gold fields is refused.\n\n" +
	"Run the same command again after a crash or Ctrl-C: the run resumes and plays\n" +
	"only the episodes it has not recorded. A finished run is reported complete.\n\n"

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
	return []cli.Flag{
		&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import (or a tasks.jsonl FILE, with --db-root)"},
		&cli.StringFlag{Name: "db-root", Usage: "`DIR` of the databases (default: the one recorded at import)"},
		&cli.StringFlag{Name: "endpoint", Required: true, Usage: "OpenAI-compatible server `URL`, e.g. http://127.0.0.1:8000/v1"},
		&cli.StringFlag{Name: "model", Required: true, Usage: "model `NAME` the server serves (recorded)"},
		&cli.StringFlag{Name: "model-identity", Usage: "model identity `blake3:HEX` of the checkpoint the server serves (rlgate ckpt digest prints it; recorded for the identity audit)"},
		&cli.StringFlag{Name: "api-key-env", Usage: "environment `VAR` holding the API key, sent as a bearer token and never recorded"},
		&cli.StringFlag{Name: "protocol", Usage: "protocol `FILE` (YAML or JSON) over the built-in one; unknown fields are refused"},
		&cli.IntFlag{Name: "n", HideDefault: true, Usage: "`N` samples per task, each an independent episode (overrides the protocol's sampling.n, 1 when built in)"},
		&cli.FloatFlag{Name: "temperature", HideDefault: true, Usage: "sampling temperature `T` (overrides the protocol's, 0 when built in)"},
		&cli.FloatFlag{Name: "top-p", HideDefault: true, Usage: "nucleus sampling `P` (overrides the protocol's, 1 when built in)"},
		&cli.Int64Flag{Name: "seed", HideDefault: true, Usage: "`SEED`; sample s is requested with SEED+s (overrides the protocol's, 0 when built in)"},
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "`C` episodes played at once"},
		&cli.StringFlag{Name: "run", Required: true, Usage: "run `ID`; an interrupted run with this id is resumed"},
		&cli.IntFlag{Name: "limit", HideDefault: true, Usage: "play only the first `K` tasks (default: all)"},
		&cli.DurationFlag{Name: "request-timeout", Value: rollout.DefaultClientOptions().RequestTimeout, Usage: "`DURATION` one request may take before it is retried"},
	}
}

// rolloutOptions is the rollout command line, parsed.
type rolloutOptions struct {
	Dir            string // ledger
	JSON           bool
	Tasks          string
	DBRoot         string
	Endpoint       string
	Model          string
	ModelIdentity  *ledger.Digest
	APIKeyEnv      string
	Protocol       string // file; empty: the built-in protocol
	Sampling       samplingFlags
	Concurrency    int
	Run            string
	Limit          int
	RequestTimeout time.Duration
	Progress       io.Writer // where progress goes; nil: nowhere
}

// samplingFlags are the sampling flags given on the command line; nil
// fields leave the protocol's value.
type samplingFlags struct {
	N           *int
	Temperature *float64
	TopP        *float64
	Seed        *int64
}

func rolloutOptionsFrom(cmd *cli.Command) (rolloutOptions, error) {
	o := rolloutOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Tasks: cmd.String("tasks"), DBRoot: cmd.String("db-root"),
		Endpoint: cmd.String("endpoint"), Model: cmd.String("model"), APIKeyEnv: cmd.String("api-key-env"), Protocol: cmd.String("protocol"),
		Concurrency: cmd.Int("concurrency"), Run: cmd.String("run"), Limit: cmd.Int("limit"), RequestTimeout: cmd.Duration("request-timeout"),
		Progress: cmd.Root().ErrWriter}
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
	}
	return o, nil
}

func runRollout(ctx context.Context, o rolloutOptions, w io.Writer) (*rollout.Summary, error) {
	l, err := ledger.Open(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	ro, _, err := o.resolve()
	if err != nil {
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
func (o *rolloutOptions) resolve() (rollout.Options, *taskSource, error) {
	p := rollout.DefaultProtocol()
	if o.Protocol != "" {
		var err error
		if p, err = rollout.LoadProtocol(o.Protocol); err != nil {
			return rollout.Options{}, nil, err
		}
	}
	sf := o.Sampling
	if sf.N != nil {
		p.Sampling.N = *sf.N
	}
	if sf.Temperature != nil {
		p.Sampling.Temperature = *sf.Temperature
	}
	if sf.TopP != nil {
		p.Sampling.TopP = *sf.TopP
	}
	if sf.Seed != nil {
		p.Sampling.Seed = *sf.Seed
	}
	if err := p.Validate(); err != nil {
		return rollout.Options{}, nil, usagef("sampling flags: %v", err)
	}
	ts, err := loadTasks(o.Tasks, o.DBRoot)
	if err != nil {
		return rollout.Options{}, nil, err
	}
	list := ts.tasks
	if o.Limit > 0 && o.Limit < len(list) {
		list = list[:o.Limit]
	}
	var key string
	if o.APIKeyEnv != "" {
		if key = os.Getenv(o.APIKeyEnv); key == "" {
			return rollout.Options{}, nil, fmt.Errorf("rollout: environment variable %s (--api-key-env) is empty. Try: export %s=...", o.APIKeyEnv, o.APIKeyEnv)
		}
	}
	dbRoot := ts.dbRoot
	progress, terminal := o.Progress, isTerminal(o.Progress)
	return rollout.Options{Run: o.Run, Tasks: list, TasksPath: ts.path, TasksDigest: ts.digest, DBRoot: dbRoot,
		DBPath: func(id string) string { return dataset.DBPath(dbRoot, id) }, Endpoint: o.Endpoint, Model: o.Model, ModelIdentity: o.ModelIdentity, APIKey: key,
		Protocol: p, Concurrency: o.Concurrency, Client: rollout.ClientOptions{RequestTimeout: o.RequestTimeout},
		Progress: progress, Terminal: terminal}, ts, nil
}

// taskSource is a tasks file read for a rollout.
type taskSource struct {
	dir    string // the imported dataset directory; empty when a file was given
	path   string
	digest ledger.Digest
	dbRoot string
	tasks  []tasks.Task
}

// loadTasks reads the public tasks of an imported dataset directory (or a
// tasks.jsonl file) and its database root: dbRoot when given, else the
// one recorded at import.
func loadTasks(path, dbRoot string) (*taskSource, error) {
	src := &taskSource{path: path, dbRoot: dbRoot}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		src.dir, src.path = path, filepath.Join(path, dataset.TasksFile)
		if dbRoot == "" {
			man, err := dataset.ReadManifest(path)
			if err != nil {
				return nil, err
			}
			src.dbRoot = man.DBRoot
		}
	}
	if src.dbRoot == "" {
		return nil, usagef("--tasks %s is a file: give --db-root too", path)
	}
	var err error
	if src.tasks, err = tasks.Read(src.path); err != nil {
		return nil, err
	}
	f, err := os.Open(src.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if src.digest, _, err = ledger.SumReader(f); err != nil {
		return nil, fmt.Errorf("hash tasks %s: %w", src.path, err)
	}
	return src, nil
}

// isTerminal reports whether w is a terminal, where a progress bar can be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func printRolloutSummary(w io.Writer, s *rollout.Summary) {
	want := s.Tasks * s.Samples
	switch s.Status {
	case "complete":
		fmt.Fprintf(w, "rlgate: rollout %s is complete: %d episodes recorded; nothing to do\n", s.Run, s.Episodes)
	case "interrupted":
		fmt.Fprintf(w, "rlgate: rollout %s interrupted: %d of %d episodes recorded. Run the same command again to resume.\n", s.Run, s.Episodes, want)
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
}
