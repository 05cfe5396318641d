package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/textout"
)

// Replaying is a recorded rollout served as an OpenAI-compatible endpoint
// that replays its replies (rlgate serve-replay); rlgate prints it once
// the endpoint listens.
type Replaying struct {
	Run      string `json:"run"`
	Model    string `json:"model"`
	Episodes int    `json:"episodes"`
	URL      string `json:"url"` // the OpenAI base URL to give rlgate rollout --endpoint
	srv      *http.Server
	served   chan error
}

// ServeReplay is rlgate serve-replay: Replay, said on w (as JSON when
// asJSON) once it listens, and served until ctx ends; it returns ctx's
// error.
func ServeReplay(ctx context.Context, dir, run, addr string, asJSON bool, w io.Writer) error {
	s, err := Replay(ctx, dir, run, addr)
	if err != nil {
		return err
	}
	if err := textout.Emit(w, asJSON, s, s.WriteText); err != nil {
		s.Close()
		return err
	}
	return s.Wait(ctx)
}

// Replay loads every episode of the rollout run from the ledger in dir
// (rollout.NewReplay; the ledger is closed again, the replay holds what
// it serves) and serves them on addr (port 0: any free port) until Wait
// or Close ends it.
func Replay(ctx context.Context, dir, run, addr string) (*Replaying, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	rp, err := rollout.NewReplay(ctx, l, run)
	l.Close()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve replay: %w. Try: another --addr", err)
	}
	r := &Replaying{Run: run, Model: rp.Model(), Episodes: rp.Episodes(), URL: "http://" + ln.Addr().String() + "/v1",
		srv: &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}, served: make(chan error, 1)}
	go func() { r.served <- r.srv.Serve(ln) }()
	return r, nil
}

// WriteText says what is replayed and where.
func (r *Replaying) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "rlgate: replaying run %s (%d episodes, model %s) at %s; stop with Ctrl-C\n", r.Run, r.Episodes, ledger.Printable(r.Model), r.URL)
	return err
}

// Close stops serving, giving requests in flight five seconds to finish.
func (r *Replaying) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// Wait serves until ctx ends, then stops (Close) and returns ctx's error;
// or until serving fails.
func (r *Replaying) Wait(ctx context.Context) error {
	select {
	case err := <-r.served:
		return fmt.Errorf("serve replay: %w", err)
	case <-ctx.Done():
	}
	if err := r.Close(); err != nil {
		return err
	}
	return ctx.Err()
}
