package rollout

import (
	"context"
	"errors"
	"time"

	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
)

// StopReason says why an episode ended.
type StopReason string

// The stop reasons. Only StopSolution leaves a final SQL to grade; every
// reason but StopTransport ends a finished episode.
const (
	StopSolution       StopReason = "solution"        // the model answered with <solution>
	StopMaxTurns       StopReason = "max_turns"       // the last allowed reply was not a solution
	StopBudget         StopReason = "budget"          // the context or SQL budget ran out
	StopFormatFailures StopReason = "format_failures" // one malformed reply more than format_retries
	StopHTTPError      StopReason = "http_error"      // the endpoint answered a request with a 4xx other than 429
	// StopTransport: every attempt of a request met a transport failure
	// (no connection, a reset, a timeout, a 5xx or 429, a reply that is
	// not a chat completion). The episode is recorded but not finished: a
	// resume plays it again.
	StopTransport StopReason = "transport_error"
)

// Finished reports whether an episode that stopped for r is finished: all
// but a transport failure are, the model's own failures included.
func (r StopReason) Finished() bool { return r != StopTransport }

// Episode is one (task, sample) played to its end: every request and
// response body, every turn parsed, and what it spent.
type Episode struct {
	TaskID     string     `json:"task_id"`
	Sample     int        `json:"sample"`
	DBID       string     `json:"db_id"`
	StopReason StopReason `json:"stop_reason"`
	FinalSQL   string     `json:"final_sql,omitempty"` // the <solution> body
	Error      string     `json:"error,omitempty"`     // why an http_error or transport_error episode ended
	Usage      Spent      `json:"usage"`
	Turns      []Turn     `json:"turns"`
}

// Spent is an episode's use of its budgets.
type Spent struct {
	Turns          int `json:"turns"` // model replies (requests that failed count too)
	SQLExecutions  int `json:"sql_executions"`
	FormatFailures int `json:"format_failures"`
	TokensIn       int `json:"tokens_in"`  // prompt tokens over all requests
	TokensOut      int `json:"tokens_out"` // completion tokens over all requests
	// MaxContext is the largest prompt plus reply of one request. Only a
	// turn marked OverBudget, which ends the episode unacted upon, can
	// exceed the protocol's context_tokens.
	MaxContext int `json:"max_context"`
	// Estimated is set when some turn's tokens were estimated because the
	// server reported no usage.
	Estimated bool    `json:"estimated,omitempty"`
	LatencyMS float64 `json:"latency_ms"` // endpoint time, retries included
	SQLMS     float64 `json:"sql_ms"`     // executor time
}

// Turn is one request and its reply: the bodies as sent and received, the
// reply's parts, the environment's answer and what the turn cost. A turn
// whose request failed has Error and no reply.
type Turn struct {
	Index        int       `json:"index"`
	Request      Body      `json:"request"`
	Status       int       `json:"status"` // of the last attempt; 0 when no response came
	Response     Body      `json:"response,omitempty"`
	Retried      []Attempt `json:"retried,omitempty"` // failed attempts before the last
	Error        string    `json:"error,omitempty"`
	Reply        string    `json:"reply"`
	FinishReason string    `json:"finish_reason,omitempty"`
	Think        string    `json:"think,omitempty"`
	SQL          string    `json:"sql,omitempty"`
	Observation  string    `json:"observation,omitempty"`
	Solution     string    `json:"solution,omitempty"`
	FormatError  string    `json:"format_error,omitempty"`
	// SQLStatus is ok, error or timeout for an executed <sql>, and
	// not_run when the turn or SQL budget left no room to run it.
	SQLStatus string  `json:"sql_status,omitempty"`
	SQLMS     float64 `json:"sql_ms,omitempty"`
	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	Estimated bool    `json:"estimated,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
	// OverBudget is set on a reply whose prompt plus completion exceeded
	// context_tokens: it is recorded and not acted upon.
	OverBudget bool `json:"over_budget,omitempty"`
}

// env plays episodes: one protocol, one endpoint, one executor.
type env struct {
	proto  *Protocol
	model  string
	client *client
	exec   *sqlenv.Executor
	dbPath func(dbID string) string
}

// play runs one episode to its end. The error is the context's, when it
// ended first; the episode is then incomplete and must not be recorded.
func (e *env) play(ctx context.Context, t *tasks.Task, sample int) (*Episode, error) {
	p := e.proto
	ep := &Episode{TaskID: t.ID, Sample: sample, DBID: t.DBID}
	req := ChatRequest{
		Model:       e.model,
		Messages:    p.Messages(t),
		Temperature: p.Sampling.Temperature,
		TopP:        p.Sampling.TopP,
		Seed:        p.Sampling.Seed + int64(sample),
		N:           1,
		Stop:        p.Stop,
		User:        EpisodeUser(t.ID, sample),
	}
	// known is the context of the last request as the server counted it
	// (prompt plus reply); fresh holds the messages added since.
	known, fresh := 0, req.Messages
	stop := func(r StopReason) (*Episode, error) { ep.StopReason = r; return ep, nil }
	for {
		prompt := known
		for _, m := range fresh {
			prompt += estimateTokens(m.Content)
		}
		if prompt >= p.ContextTokens {
			return stop(StopBudget)
		}
		req.MaxTokens = min(p.MaxTokensPerTurn, p.ContextTokens-prompt)
		body, err := marshal(&req)
		if err != nil {
			return nil, err
		}
		x, err := e.client.do(ctx, body)
		if err != nil {
			return nil, err
		}
		turn := Turn{Index: len(ep.Turns), Request: body, Status: x.status, Response: x.body, Retried: x.failed, LatencyMS: millis(x.duration)}
		ep.Usage.Turns++
		ep.Usage.LatencyMS += turn.LatencyMS
		if x.err != nil {
			turn.Error = x.err.Error()
			ep.Turns = append(ep.Turns, turn)
			ep.Error = turn.Error
			if x.transient {
				return stop(StopTransport)
			}
			return stop(StopHTTPError)
		}
		ch := x.resp.Choices[0]
		if ch.Message.Content != nil {
			turn.Reply = *ch.Message.Content
		}
		turn.FinishReason = ch.FinishReason
		if u := x.resp.Usage; u != nil {
			turn.TokensIn, turn.TokensOut = u.PromptTokens, u.CompletionTokens
		} else {
			turn.TokensIn, turn.TokensOut, turn.Estimated = prompt, estimateTokens(turn.Reply), true
			ep.Usage.Estimated = true
		}
		ep.Usage.TokensIn += turn.TokensIn
		ep.Usage.TokensOut += turn.TokensOut
		known = turn.TokensIn + turn.TokensOut
		ep.Usage.MaxContext = max(ep.Usage.MaxContext, known)
		if known > p.ContextTokens {
			turn.OverBudget = true
			ep.Turns = append(ep.Turns, turn)
			return stop(StopBudget)
		}
		turnsLeft := p.MaxTurns - ep.Usage.Turns

		parsed, perr := sqlenv.ParseTurn(turn.Reply)
		var fe *sqlenv.FormatError
		if errors.As(perr, &fe) {
			turn.FormatError = fe.Error()
			ep.Turns = append(ep.Turns, turn)
			ep.Usage.FormatFailures++
			switch {
			case ep.Usage.FormatFailures > p.FormatRetries:
				return stop(StopFormatFailures)
			case turnsLeft == 0:
				return stop(StopMaxTurns)
			}
			fresh = []Message{{Role: "assistant", Content: turn.Reply}, {Role: "user", Content: p.CorrectionMessage(fe.Hint(), turnsLeft)}}
			req.Messages = append(req.Messages, fresh...)
			continue
		}
		turn.Think = parsed.Think
		if parsed.Action == sqlenv.ActionSolution {
			turn.Solution = parsed.Body
			ep.FinalSQL = parsed.Body
			ep.Turns = append(ep.Turns, turn)
			return stop(StopSolution)
		}
		turn.SQL = parsed.Body
		switch {
		case turnsLeft == 0:
			turn.SQLStatus = "not_run"
			ep.Turns = append(ep.Turns, turn)
			return stop(StopMaxTurns)
		case ep.Usage.SQLExecutions >= p.SQLBudget:
			turn.SQLStatus = "not_run"
			ep.Turns = append(ep.Turns, turn)
			return stop(StopBudget)
		}
		t0 := time.Now()
		res, xerr := e.exec.Execute(ctx, e.dbPath(t.DBID), parsed.Body)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		turn.SQLMS = millis(time.Since(t0))
		ep.Usage.SQLExecutions++
		ep.Usage.SQLMS += turn.SQLMS
		switch {
		case xerr == nil:
			turn.SQLStatus = "ok"
		case errors.Is(xerr, sqlenv.ErrTimeout):
			turn.SQLStatus = "timeout"
		default:
			turn.SQLStatus = "error"
		}
		turn.Observation = sqlenv.RenderObservation(res, xerr, p.observationOptions())
		ep.Turns = append(ep.Turns, turn)
		reply := turn.Reply
		if parsed.Unclosed {
			reply += "</sql>" // the engine stripped the stop string; the history shows the turn whole
		}
		fresh = []Message{{Role: "assistant", Content: reply}, {Role: "user", Content: p.ObservationMessage(turn.Observation, turnsLeft)}}
		req.Messages = append(req.Messages, fresh...)
	}
}
