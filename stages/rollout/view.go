package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// MaxViewRows bounds the rows of one observation a View shows: the
// protocol's observation profile bounds what the policy saw, but a
// profile may allow more than a page should hold.
const MaxViewRows = 200

// View is one recorded episode as the policy lived it, for a reader (the
// trajectory pages of rlgate ui): every turn's reasoning, SQL,
// observation as a table, and solution, what the episode spent against
// the protocol's budgets, how it stopped, and where its raw request and
// response bodies lie. It holds only what the rollout recorded: the
// grader's verdict and the gold are read apart (package grade), never
// from here.
type View struct {
	Run   string `json:"run"`
	Model string `json:"model"`
	// Episode is the reference the trajectories entry holds: the entry
	// (Seq), the blob, and the episode's line in it (Offset, Length).
	Episode    Recorded   `json:"episode"`
	Finished   bool       `json:"finished"`
	DBID       string     `json:"db_id"`
	StopReason StopReason `json:"stop_reason"`
	FinalSQL   string     `json:"final_sql,omitempty"`
	Error      string     `json:"error,omitempty"`
	Usage      Spent      `json:"usage"`
	Limits     Limits     `json:"limits"`
	// Prompt is the conversation the first request opened with (the
	// system and user messages: the schema and the question), read from
	// its body; empty when that body does not read as a chat request.
	Prompt []Message  `json:"prompt,omitempty"`
	Turns  []TurnView `json:"turns"`
}

// Limits are the protocol's budgets an episode's Usage is measured
// against.
type Limits struct {
	MaxTurns         int `json:"max_turns"`
	SQLBudget        int `json:"sql_budget"`
	ContextTokens    int `json:"context_tokens"`
	MaxTokensPerTurn int `json:"max_tokens_per_turn"`
	FormatRetries    int `json:"format_retries"`
}

// TurnView is one turn of a View.
type TurnView struct {
	Index        int    `json:"index"`
	Status       int    `json:"status"`
	Retries      int    `json:"retries"` // failed attempts before the last
	Error        string `json:"error,omitempty"`
	Reply        string `json:"reply"`
	FinishReason string `json:"finish_reason,omitempty"`
	Think        string `json:"think,omitempty"`
	SQL          string `json:"sql,omitempty"`
	SQLStatus    string `json:"sql_status,omitempty"`
	Solution     string `json:"solution,omitempty"`
	FormatError  string `json:"format_error,omitempty"`
	// Observation is the text the policy read; Table is the same read
	// back as a table (nil when it does not read as one), with at most
	// MaxViewRows rows, HiddenRows counting the rows of the observation
	// left out of Table.
	Observation string                   `json:"observation,omitempty"`
	Table       *sqlenv.ObservationTable `json:"table,omitempty"`
	HiddenRows  int                      `json:"hidden_rows,omitempty"`
	TokensIn    int                      `json:"tokens_in"`
	TokensOut   int                      `json:"tokens_out"`
	Estimated   bool                     `json:"estimated,omitempty"`
	LatencyMS   float64                  `json:"latency_ms"`
	SQLMS       float64                  `json:"sql_ms,omitempty"`
	OverBudget  bool                     `json:"over_budget,omitempty"`
	Endpoint    string                   `json:"endpoint,omitempty"`
	// RequestBytes and ResponseBytes are the sizes of the raw bodies,
	// which ReadBody returns.
	RequestBytes  int `json:"request_bytes"`
	ResponseBytes int `json:"response_bytes"`
}

// BodyPart names a raw body of a turn: what was sent or what came back.
type BodyPart string

// The parts of a turn ReadBody returns.
const (
	PartRequest  BodyPart = "request"
	PartResponse BodyPart = "response"
)

// ReadView reads the episode of (task, sample) that rollout run recorded:
// its finished episode, or else the last unfinished one (a transport
// failure a resume would play again).
func ReadView(ctx context.Context, l *ledger.Ledger, run, task string, sample int) (*View, error) {
	start, err := ReadStart(ctx, l, run)
	if err != nil {
		return nil, err
	}
	ref, ep, err := readOne(ctx, l, run, task, sample)
	if err != nil {
		return nil, err
	}
	p := start.Protocol
	v := &View{Run: run, Model: start.Model, Episode: ref, Finished: ep.StopReason.Finished(), DBID: ep.DBID, StopReason: ep.StopReason,
		FinalSQL: ep.FinalSQL, Error: ep.Error, Usage: ep.Usage, Turns: make([]TurnView, len(ep.Turns)),
		Limits: Limits{MaxTurns: p.MaxTurns, SQLBudget: p.SQLBudget, ContextTokens: p.ContextTokens, MaxTokensPerTurn: p.MaxTokensPerTurn, FormatRetries: p.FormatRetries}}
	if len(ep.Turns) > 0 {
		var first ChatRequest
		if json.Unmarshal(ep.Turns[0].Request, &first) == nil {
			v.Prompt = first.Messages
		}
	}
	for i, t := range ep.Turns {
		tv := TurnView{Index: t.Index, Status: t.Status, Retries: len(t.Retried), Error: t.Error, Reply: t.Reply, FinishReason: t.FinishReason,
			Think: t.Think, SQL: t.SQL, SQLStatus: t.SQLStatus, Solution: t.Solution, FormatError: t.FormatError, Observation: t.Observation,
			TokensIn: t.TokensIn, TokensOut: t.TokensOut, Estimated: t.Estimated, LatencyMS: t.LatencyMS, SQLMS: t.SQLMS, OverBudget: t.OverBudget,
			Endpoint: t.Endpoint, RequestBytes: len(t.Request), ResponseBytes: len(t.Response)}
		if t.Observation != "" {
			if tb, ok := sqlenv.ParseObservation(t.Observation, p.observationOptions()); ok {
				if len(tb.Rows) > MaxViewRows {
					tv.HiddenRows, tb.Rows = len(tb.Rows)-MaxViewRows, tb.Rows[:MaxViewRows]
				}
				tv.Table = tb
			}
		}
		v.Turns[i] = tv
	}
	return v, nil
}

// ReadBody returns a raw body of one turn of the episode ReadView reads,
// byte for byte as it was sent or received.
func ReadBody(ctx context.Context, l *ledger.Ledger, run, task string, sample, turn int, part BodyPart) ([]byte, error) {
	_, ep, err := readOne(ctx, l, run, task, sample)
	if err != nil {
		return nil, err
	}
	if turn < 0 || turn >= len(ep.Turns) {
		return nil, fmt.Errorf("read body of %s %s#%d: %w: turn %d of %d", run, task, sample, ledger.ErrNotFound, turn, len(ep.Turns))
	}
	switch part {
	case PartRequest:
		return ep.Turns[turn].Request, nil
	case PartResponse:
		return ep.Turns[turn].Response, nil
	}
	return nil, fmt.Errorf("read body of %s %s#%d: no part %q: want %s or %s", run, task, sample, part, PartRequest, PartResponse)
}

// readOne finds the reference of (task, sample) among the run's
// trajectories entries (the finished one, or else the last unfinished)
// and reads its episode from the blob, re-hashed. Bodies are canonical
// JSON, so an entry whose body lacks the task id's canonical encoding
// holds none of its episodes and is not decoded: a page reads one
// episode of a run of thousands.
func readOne(ctx context.Context, l *ledger.Ledger, run, task string, sample int) (Recorded, *Episode, error) {
	needle, err := ledger.CanonicalJSON(task)
	if err != nil {
		return Recorded{}, nil, err
	}
	var found *Recorded
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindTrajectories, Run: run}) {
		if err != nil {
			return Recorded{}, nil, fmt.Errorf("read trajectories of %s: %w", run, err)
		}
		if !bytes.Contains(e.Body, needle) {
			continue
		}
		b, err := decodeTrajectories(e.Body)
		if err != nil {
			return Recorded{}, nil, fmt.Errorf("read trajectories of %s: entry %d: %w", run, e.Seq, err)
		}
		for _, ref := range b.Episodes {
			if ref.TaskID == task && ref.Sample == sample && (found == nil || !found.StopReason.Finished()) {
				found = &Recorded{EpisodeRef: ref, Blob: b.Blob, Seq: e.Seq}
			}
		}
	}
	if found == nil {
		return Recorded{}, nil, fmt.Errorf("read episode %s#%d of %s: %w: the run recorded no such episode. Try: rlgate log --run %s --kind trajectories",
			task, sample, run, ledger.ErrNotFound, run)
	}
	eps, err := readEpisodes(l, run, []Recorded{*found})
	if err != nil {
		return Recorded{}, nil, err
	}
	return *found, &eps[0], nil
}
