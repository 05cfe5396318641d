package reproduce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
)

// reproduceRollout reproduces a rollout without a model server: it is
// played again, as a new rollout run, with the recorded protocol, model,
// tasks (which must still have the recorded digest) and databases,
// against the replay endpoint of the recorded run (rlgate serve-replay),
// which answers each request with the recorded response. It reproduces
// when every request of every episode is the recorded one byte for byte:
// the policy side saw nothing else (gold included) than it did.
func reproduceRollout(ctx context.Context, l *ledger.Ledger, r ledger.Run) (runner.Reproduction, error) {
	b := runner.Reproduction{Original: r.Run, Stage: r.Stage}
	st, err := rollout.ReadStart(ctx, l, r.Run)
	if err != nil {
		return b, err
	}
	replay, err := rollout.NewReplay(ctx, l, r.Run)
	if err != nil {
		return b, err
	}
	ts, err := dataset.LoadTasks(st.Tasks, st.DBRoot, st.Count)
	if err != nil {
		b.Refused = "tasks " + st.Tasks + ": " + err.Error()
		return b, nil
	}
	if ts.Digest != st.TasksDigest {
		b.Refused = fmt.Sprintf("input tasks (%s): recorded %s, now %s", st.Tasks, st.TasksDigest, ts.Digest)
		return b, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return b, err
	}
	srv := &http.Server{Handler: replay, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	b.Run = StagePrefix + r.Run + "-" + time.Now().UTC().Format("20060102T150405")
	dbRoot := st.DBRoot
	_, err = rollout.Play(ctx, l, rollout.Options{Run: b.Run, Tasks: ts.Tasks, TasksPath: ts.Path, TasksDigest: ts.Digest, DBRoot: dbRoot,
		DBPath: func(id string) string { return dataset.DBPath(dbRoot, id) }, Endpoint: "http://" + ln.Addr().String() + "/v1",
		Model: st.Model, Protocol: st.Protocol, Concurrency: st.Parallel,
		Client: rollout.ClientOptions{RequestTimeout: time.Duration(st.Client.RequestTimeoutMS) * time.Millisecond, MaxAttempts: st.Client.MaxAttempts}})
	switch {
	case ctx.Err() != nil:
		return b, ctx.Err()
	case errors.Is(err, rollout.ErrIncomplete):
		b.Failed = err.Error()
	case err != nil:
		return b, err
	}
	o, err := compareRequests(ctx, l, r.Run, b.Run)
	if err != nil {
		return b, err
	}
	b.Outputs = []runner.ReproducedOutput{o}
	b.Reproduced = b.Failed == "" && o.Verdict == runner.OutputIdentical
	return b, nil
}

// compareRequests compares every request of two rollouts' episodes, turn
// by turn, naming the first that differs and its first differing byte.
func compareRequests(ctx context.Context, l *ledger.Ledger, was, now string) (runner.ReproducedOutput, error) {
	o := runner.ReproducedOutput{Name: "requests", Kind: records.KindTrajectories, Verdict: runner.OutputIdentical}
	a, err := rollout.ReadEpisodes(ctx, l, was)
	if err != nil {
		return o, err
	}
	b, err := rollout.ReadEpisodes(ctx, l, now)
	if err != nil {
		return o, err
	}
	type key struct {
		task   string
		sample int
	}
	replayed := map[key]rollout.Episode{}
	for _, ep := range b {
		replayed[key{ep.TaskID, ep.Sample}] = ep
	}
	for _, ep := range a {
		got, ok := replayed[key{ep.TaskID, ep.Sample}]
		switch {
		case !ok:
			o.Verdict, o.At = runner.OutputMissing, fmt.Sprintf("task %s sample %d: not played again", ep.TaskID, ep.Sample)
			return o, nil
		case len(got.Turns) != len(ep.Turns):
			o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("task %s sample %d: %d turns, replayed %d", ep.TaskID, ep.Sample, len(ep.Turns), len(got.Turns))
			return o, nil
		}
		for i, t := range ep.Turns {
			if !bytes.Equal(t.Request, got.Turns[i].Request) {
				off, err := firstDifference(bytes.NewReader(t.Request), bytes.NewReader(got.Turns[i].Request))
				if err != nil {
					return o, err
				}
				o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("task %s sample %d turn %d: request byte offset %d", ep.TaskID, ep.Sample, t.Index, off)
				return o, nil
			}
		}
	}
	if len(b) != len(a) {
		o.Verdict, o.At = runner.OutputDiffers, fmt.Sprintf("%d episodes, replayed %d", len(a), len(b))
	}
	return o, nil
}
