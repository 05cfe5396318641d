// Package evaluate is the evaluation workflow: it checks the databases a
// run plays and grades on against the digests their import recorded,
// plays the rollout, applies the policy for an incomplete rollout and
// grades the frozen trajectories (Eval); it also holds the workflows that
// share its parts: a rollout alone (Rollout), offline grading of
// prediction files (Grade) and cold-start synthesis (Synth). rlgate
// rollout, eval, grade and synth are each flags, one call here, output.
package evaluate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/usage"
)

// usagef is a request that cannot be run as written (a sampling value, a
// tasks path of the wrong kind, a mode the samples cannot serve).
var usagef = usage.Errorf

// PlayOptions say which servers play the policy, how they are reached,
// under which protocol and on which tasks: what every workflow that plays
// episodes (Rollout, Eval, Synth) takes alike.
type PlayOptions struct {
	Dir            string // ledger
	Tasks          string // a directory written by rlgate data import, or a tasks.jsonl file with DBRoot
	DBRoot         string // empty: the one recorded at import
	Endpoints      []string
	Model          string
	ModelIdentity  *ledger.Digest
	APIKeyEnv      string // environment variable holding the API key
	Protocol       string // file; empty: the built-in protocol
	Sampling       rollout.SamplingOverride
	Concurrency    int
	Run            string
	Limit          int // 0: every task
	RequestTimeout time.Duration
	MaxAttempts    int
	FlushEvery     time.Duration // finished episodes reach the ledger at least this often
	Progress       io.Writer     // where progress goes; nil: nowhere
	Terminal       bool          // Progress is a terminal, where a bar is redrawn in place
}

// resolve checks the request's numbers, reads the protocol and the tasks and fills rollout.Options.
func (o *PlayOptions) resolve() (rollout.Options, *dataset.TaskSource, error) {
	switch {
	case o.Concurrency < 1:
		return rollout.Options{}, nil, usagef("--concurrency %d: want at least 1", o.Concurrency)
	case o.Limit < 0:
		return rollout.Options{}, nil, usagef("--limit %d: want 0 (all tasks) or more", o.Limit)
	case o.RequestTimeout <= 0:
		return rollout.Options{}, nil, usagef("--request-timeout %s: want a positive duration", o.RequestTimeout)
	case o.MaxAttempts < 1:
		return rollout.Options{}, nil, usagef("--max-attempts %d: want at least 1", o.MaxAttempts)
	case o.FlushEvery <= 0:
		return rollout.Options{}, nil, usagef("--flush %s: want a positive duration", o.FlushEvery)
	}
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
	return rollout.Options{Run: o.Run, Tasks: ts.Tasks, TasksPath: ts.Path, TasksDigest: ts.Digest, DBRoot: dbRoot,
		DBPath: func(id string) string { return dataset.DBPath(dbRoot, id) }, Endpoints: o.Endpoints, Model: o.Model, ModelIdentity: o.ModelIdentity, APIKey: key,
		Protocol: p, Concurrency: o.Concurrency, Client: rollout.ClientOptions{RequestTimeout: o.RequestTimeout, MaxAttempts: o.MaxAttempts},
		FlushEvery: o.FlushEvery, Progress: o.Progress, Terminal: o.Terminal}, ts, nil
}

// checkTaskDatabases checks the databases a rollout or an evaluation runs
// on against the digests its import recorded (grade.CheckDatabases). A
// tasks.jsonl given without its import directory has no recorded digests
// and is not checked.
func checkTaskDatabases(ctx context.Context, src *dataset.TaskSource, allowMismatch bool, progress io.Writer) (*grade.DatabaseCheck, error) {
	if src.Dir == "" {
		return nil, nil
	}
	man, err := dataset.ReadManifest(src.Dir)
	if err != nil {
		return nil, err
	}
	return grade.CheckDatabases(ctx, man, src.DBRoot, allowMismatch, progress)
}

// Rollout plays the tasks of o against its endpoints as a rollout run,
// after checking their databases against the import. An interrupted run
// is resumed, a finished one reported complete. The summary comes back
// beside the error of a run that ended failed or interrupted; it is nil
// when nothing was played.
func Rollout(ctx context.Context, o PlayOptions) (*rollout.Summary, error) {
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
	return rollout.Play(ctx, l, ro)
}
