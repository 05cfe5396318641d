// Package serve serves the reference policy (lab/refpolicy) over the
// OpenAI API for rlgate serve-policy: until the command is interrupted, or
// while one command runs against it, supervised as a stage of rlgate run
// is (runner.Command), so that one supervisor starts, stops and reaps
// every child process rlgate runs. It also serves a recorded rollout's
// replies for rlgate serve-replay (Replay).
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/textout"
)

// Endpoint is what a listening server tells its users.
type Endpoint struct {
	Ckpt          string `json:"ckpt"`
	Model         string `json:"model"`
	ModelIdentity string `json:"model_identity"`
	URL           string `json:"url"` // the OpenAI base URL to give rlgate rollout/eval --endpoint
}

// WriteText says what is served, where, and how to stop it.
func (e Endpoint) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "rlgate: serving %s as %s at %s\nmodel identity: %s\nstop with Ctrl-C\n", e.Ckpt, e.Model, e.URL, e.ModelIdentity)
	return err
}

// Server is the reference policy of one checkpoint, listening.
type Server struct {
	Endpoint
	srv    *http.Server
	served chan error
}

// Listen loads the checkpoint ckpt, computes its model identity (as rlgate
// ckpt digest does) and serves it on addr (port 0: any free port) until
// Close.
func Listen(ctx context.Context, ckpt, addr string) (*Server, error) {
	weights, err := refpolicy.Load(ckpt)
	if err != nil {
		return nil, err
	}
	man, err := manifests.BuildCheckpointManifest(ctx, ckpt)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve policy: %w. Try: another --addr, or 127.0.0.1:0 for any free port", err)
	}
	s := &Server{Endpoint: Endpoint{Ckpt: ckpt, Model: refpolicy.ModelName, ModelIdentity: man.Identity.String(), URL: "http://" + ln.Addr().String() + "/v1"},
		served: make(chan error, 1)}
	s.srv = &http.Server{Handler: refpolicy.Handler(&refpolicy.Model{W: weights}, s.ModelIdentity), ReadHeaderTimeout: 30 * time.Second}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving, giving requests in flight five seconds to finish.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// Wait serves until ctx ends, returning ctx's error, or until serving
// fails.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case err := <-s.served:
		return fmt.Errorf("serve policy: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Policy is rlgate serve-policy: the checkpoint ckpt served on addr
// (Listen) until ctx ends, said on stdout (as JSON when asJSON), returning
// ctx's error; or, with argv, served while argv runs (Run), said on
// stderr so that stdout is argv's alone, returning argv's exit code.
func Policy(ctx context.Context, ckpt, addr string, asJSON bool, argv []string, stdout, stderr io.Writer) (int, error) {
	s, err := Listen(ctx, ckpt, addr)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if len(argv) == 0 {
		if err := textout.Emit(stdout, asJSON, s.Endpoint, s.Endpoint.WriteText); err != nil {
			return 0, err
		}
		return 0, s.Wait(ctx)
	}
	fmt.Fprintf(stderr, "rlgate: serving %s (model identity %s) at %s for %s\n", ckpt, s.ModelIdentity, s.URL, argv[0])
	return s.Run(ctx, argv, stdout, stderr)
}

// Run runs argv against the endpoint and returns its exit code (-1 when a
// signal killed it): {endpoint} in argv is replaced by the base URL, and
// RLGATE_ENDPOINT and RLGATE_MODEL_IDENTITY are set in its environment.
// Its stdin is rlgate's, its output goes to stdout and stderr.
func (s *Server) Run(ctx context.Context, argv []string, stdout, stderr io.Writer) (int, error) {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.ReplaceAll(a, "{endpoint}", s.URL)
	}
	c := runner.Command(ctx, args, append(os.Environ(), "RLGATE_ENDPOINT="+s.URL, "RLGATE_MODEL_IDENTITY="+s.ModelIdentity))
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	err := c.Run()
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("serve-policy: run %s: %w", args[0], err)
	}
	return 0, nil
}
