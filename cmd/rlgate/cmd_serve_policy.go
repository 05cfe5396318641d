package main

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
			"  rlgate serve-policy --ckpt ckpt/rl --addr 127.0.0.1:0 -- rlgate eval --endpoint {endpoint} ...\n\n" +
			exitCodesHelp + " With CMD: CMD's exit code.",
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "ckpt", Required: true, Usage: "checkpoint `DIR` of the reference policy"},
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8200", Usage: "`HOST:PORT` to listen on (port 0: any free port)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runServePolicy(ctx, servePolicyOptions{JSON: cmd.Bool("json"), Ckpt: cmd.String("ckpt"), Addr: cmd.String("addr"),
				Cmd: cmd.Args().Slice(), Stderr: cmd.Root().ErrWriter}, cmd.Root().Writer)
			return err
		},
	}
}

type servePolicyOptions struct {
	JSON   bool
	Ckpt   string
	Addr   string
	Cmd    []string  // run while serving; empty: serve until ctx ends
	Stderr io.Writer // CMD's stderr, and where the listening line goes when CMD runs
}

// servePolicySummary is printed once the endpoint listens.
type servePolicySummary struct {
	Ckpt          string `json:"ckpt"`
	Model         string `json:"model"`
	ModelIdentity string `json:"model_identity"`
	URL           string `json:"url"`                 // the OpenAI base URL to give rlgate rollout/eval --endpoint
	ExitCode      *int   `json:"exit_code,omitempty"` // CMD's, when one ran
}

// runServePolicy serves until ctx ends (then returns ctx's error) or,
// with o.Cmd, until the command ends; a command that exits non-zero is a
// stageExited error carrying its code.
func runServePolicy(ctx context.Context, o servePolicyOptions, w io.Writer) (*servePolicySummary, error) {
	weights, err := refpolicy.Load(o.Ckpt)
	if err != nil {
		return nil, err
	}
	man, err := manifests.BuildCheckpointManifest(ctx, o.Ckpt)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("serve policy: %w. Try: another --addr, or 127.0.0.1:0 for any free port", err)
	}
	s := &servePolicySummary{Ckpt: o.Ckpt, Model: refpolicy.ModelName, ModelIdentity: man.Identity.String(), URL: "http://" + ln.Addr().String() + "/v1"}
	srv := &http.Server{Handler: refpolicy.Handler(&refpolicy.Model{W: weights}, s.ModelIdentity), ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if len(o.Cmd) > 0 {
		fmt.Fprintf(o.Stderr, "rlgate: serving %s (model identity %s) at %s for %s\n", o.Ckpt, s.ModelIdentity, s.URL, o.Cmd[0])
		return s, runWithEndpoint(ctx, o, s, w)
	}
	err = emit(w, o.JSON, s, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "rlgate: serving %s as %s at %s\nmodel identity: %s\nstop with Ctrl-C\n", o.Ckpt, s.Model, s.URL, s.ModelIdentity)
		return err
	})
	if err != nil {
		return s, err
	}
	select {
	case err := <-served:
		return s, fmt.Errorf("serve policy: %w", err)
	case <-ctx.Done():
		return s, ctx.Err()
	}
}

// runWithEndpoint runs o.Cmd with {endpoint} replaced and the endpoint in
// its environment, its stdout to w and stderr to o.Stderr.
func runWithEndpoint(ctx context.Context, o servePolicyOptions, s *servePolicySummary, w io.Writer) error {
	args := make([]string, len(o.Cmd))
	for i, a := range o.Cmd {
		args[i] = strings.ReplaceAll(a, "{endpoint}", s.URL)
	}
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Env = append(os.Environ(), "RLGATE_ENDPOINT="+s.URL, "RLGATE_MODEL_IDENTITY="+s.ModelIdentity)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, w, o.Stderr
	err := c.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code := ee.ExitCode()
		s.ExitCode = &code
		if code < 0 { // killed by a signal
			code = exitError
		}
		return stageExited{msg: fmt.Sprintf("serve-policy: %s exited %d", args[0], ee.ExitCode()), code: code}
	case err != nil:
		return fmt.Errorf("serve-policy: run %s: %w", args[0], err)
	}
	code := 0
	s.ExitCode = &code
	return nil
}
