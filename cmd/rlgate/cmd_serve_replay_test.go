package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/workflow/serve"
)

// lockedBuffer is an io.Writer a test can read while a command writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

// TestServeReplayReproducesTheRun records a rollout, serves it with
// serve-replay, and rolls out the same tasks against the replay: the
// second run is the first, byte for byte in every request and response.
func TestServeReplayReproducesTheRun(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if r.Turn == 0 && r.Sample == 1 {
			return rollouttest.Reply{Content: "a reply without tags", NoUsage: true}
		}
		return rollouttest.ThreeTurns(nil)(r)
	})
	rollout := func(run, endpoint string) {
		t.Helper()
		code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", endpoint, "--model", "scripted",
			"--run", run, "--limit", "25", "--n", "2", "--temperature", "0.8")
		if code != 0 {
			t.Fatalf("rollout %s: %s", run, errOut)
		}
	}
	rollout("recorded", srv.URL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve.ServeReplay(ctx, ldir, "recorded", "127.0.0.1:0", true, out)
	}()
	var s serve.Replaying
	for deadline := time.Now().Add(10 * time.Second); json.Unmarshal(out.Bytes(), &s) != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("serve-replay printed no address: %q", out.Bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Episodes != 50 || s.Model != "scripted" {
		t.Fatalf("serving %+v", s)
	}
	rollout("replayed", s.URL)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("serve-replay ended with %v", err)
	}

	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if a, b := rollouttest.Episodes(t, l, "recorded"), rollouttest.Episodes(t, l, "replayed"); len(a) != 50 || rollouttest.EpisodesDiff(a, b) != "" {
		t.Errorf("the replayed run (%d episodes) differs from the recorded one (-recorded +replayed):\n%s", len(a), rollouttest.EpisodesDiff(a, b))
	}

	if err := serve.ServeReplay(context.Background(), ldir, "no-such-run", "127.0.0.1:0", false, io.Discard); err == nil {
		t.Error("serve-replay of a missing run started")
	}
}
