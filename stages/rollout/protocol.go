package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
	"go.yaml.in/yaml/v3"
)

// ProtocolVersion names the protocol layout below; a file with another
// version is refused.
const ProtocolVersion = "rlgate.protocol/1"

// Protocol is everything that fixes what a policy sees and may spend in an
// evaluation: prompt templates, observation profile, turn, token and SQL
// budgets, and sampling. It is recorded with every rollout and its Digest
// lets an audit check that compared evaluations were held to the same one.
//
// NB: the canonical JSON of this struct is hashed (Digest); renaming a
// field or its tag changes every protocol digest.
type Protocol struct {
	Version     string             `json:"version" yaml:"version"`
	Prompt      Prompts            `json:"prompt" yaml:"prompt"`
	Observation ObservationProfile `json:"observation" yaml:"observation"`
	// MaxTurns bounds the model replies of an episode, format-correction
	// rounds included.
	MaxTurns int `json:"max_turns" yaml:"max_turns"`
	// MaxTokensPerTurn is the max_tokens of every request (lowered when
	// less of the context budget is left).
	MaxTokensPerTurn int `json:"max_tokens_per_turn" yaml:"max_tokens_per_turn"`
	// ContextTokens bounds prompt plus reply of every request.
	ContextTokens int `json:"context_tokens" yaml:"context_tokens"`
	// SQLBudget bounds the <sql> executions of an episode.
	SQLBudget int `json:"sql_budget" yaml:"sql_budget"`
	// SQLTimeoutMS is the deadline of one execution.
	SQLTimeoutMS int `json:"sql_timeout_ms" yaml:"sql_timeout_ms"`
	// SQLMaxRows is how many rows the executor reads before it stops
	// (ROW_COUNT then ends in "+"); the observation shows fewer.
	SQLMaxRows int `json:"sql_max_rows" yaml:"sql_max_rows"`
	// FormatRetries is how many format-correction prompts an episode gets;
	// the next malformed reply ends it.
	FormatRetries int      `json:"format_retries" yaml:"format_retries"`
	Stop          []string `json:"stop" yaml:"stop"`
	Sampling      Sampling `json:"sampling" yaml:"sampling"`
}

// Prompts are the templates of the conversation. Placeholders in braces
// are replaced: System and User take {db_details}, {external_knowledge},
// {question}, {max_turns} and {examples}; Observation takes {observation}
// and {turns_left}; Correction takes {hint} and {turns_left}.
type Prompts struct {
	System      string `json:"system" yaml:"system"`
	User        string `json:"user" yaml:"user"`
	Observation string `json:"observation" yaml:"observation"`
	Correction  string `json:"correction" yaml:"correction"`
	// NoKnowledge stands for {external_knowledge} when a task has none.
	NoKnowledge string `json:"no_knowledge" yaml:"no_knowledge"`
	// Examples is the example block that stands for {examples} (worked
	// examples of the turn format, as the seeds' prompts carry them);
	// WithoutExamples drops it. Left out of the canonical JSON when empty,
	// so protocols without one keep their digests.
	Examples string `json:"examples,omitempty" yaml:"examples,omitempty"`
}

// ObservationProfile selects the observation layout and its size limits.
type ObservationProfile struct {
	Format       string `json:"format" yaml:"format"` // must be sqlenv.ObservationFormat
	MaxRows      int    `json:"max_rows" yaml:"max_rows"`
	MaxCellRunes int    `json:"max_cell_runes" yaml:"max_cell_runes"`
}

// Sampling are the decoding parameters. N is the number of samples per
// task, each an independent episode; sample s is requested with seed
// Seed+s, so samples differ under a seeded engine and each is
// reproducible.
type Sampling struct {
	N           int     `json:"n" yaml:"n"`
	Temperature float64 `json:"temperature" yaml:"temperature"`
	TopP        float64 `json:"top_p" yaml:"top_p"`
	Seed        int64   `json:"seed" yaml:"seed"`
}

const defaultSystem = `You are a careful data analyst. You answer a question about a SQLite database by writing one SQLite query, and you may explore the database before you answer.

Work in turns. In every turn, first reason step by step inside <think>...</think>. Then write exactly one of:
- <sql>...</sql>: one read-only SQLite query to explore the data. It is executed and its result comes back inside <observation>...</observation>.
- <solution>...</solution>: your final SQLite query. It ends the task.

Rules:
- One <sql> or <solution> block per reply, and nothing after it.
- Only SELECT queries; the database is read-only.
- The final query must return exactly what the question asks for, no extra columns.
- You have at most {max_turns} turns. Check values and joins with <sql> when unsure, and answer before you run out of turns.`

const defaultUser = `Database schema:
{db_details}

External knowledge:
{external_knowledge}

Question:
{question}`

// DefaultProtocol returns the built-in protocol: the seeds' multi-turn
// SQL agent (think, explore with <sql>, answer with <solution>), at most 6
// turns, 2048 tokens per turn within a 16384-token context, 5 SQL
// executions of at most 10 s, observations of at most 50 rows, 3
// format-correction prompts, greedy decoding with one sample.
func DefaultProtocol() Protocol {
	return Protocol{
		Version: ProtocolVersion,
		Prompt: Prompts{
			System:      defaultSystem,
			User:        defaultUser,
			Observation: "<observation>\n{observation}\n</observation>\n<reminder>You have {turns_left} turns left to complete the task.</reminder>",
			Correction:  "Your reply broke the format. {hint}\n<reminder>You have {turns_left} turns left to complete the task.</reminder>",
			NoKnowledge: "None",
		},
		Observation:      ObservationProfile{Format: sqlenv.ObservationFormat, MaxRows: 50, MaxCellRunes: 200},
		MaxTurns:         6,
		MaxTokensPerTurn: 2048,
		ContextTokens:    16384,
		SQLBudget:        5,
		SQLTimeoutMS:     10_000,
		SQLMaxRows:       10_000,
		FormatRetries:    3,
		Stop:             []string{"</sql>", "</solution>"},
		Sampling:         Sampling{N: 1, Temperature: 0, TopP: 1, Seed: 0},
	}
}

// LoadProtocol reads a protocol file over the default: fields the file
// leaves out keep their default values, unknown fields are refused. A
// .json file is read as JSON, anything else as YAML.
func LoadProtocol(path string) (Protocol, error) {
	p := DefaultProtocol()
	raw, err := untrusted.ReadFile(path, untrusted.ProtocolLimit)
	if err != nil {
		return p, fmt.Errorf("load protocol: %w", err)
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		err = dec.Decode(&p)
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		err = dec.Decode(&p)
	}
	if err != nil {
		return p, fmt.Errorf("load protocol %s: %w: %v", path, ErrProtocol, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("load protocol %s: %w", path, err)
	}
	return p, nil
}

// Validate checks every field, naming the first one out of range.
func (p *Protocol) Validate() error {
	bad := func(field, why string) error { return fmt.Errorf("%w: %s %s", ErrProtocol, field, why) }
	switch {
	case p.Version != ProtocolVersion:
		return bad("version", fmt.Sprintf("is %q; this rlgate reads %q", p.Version, ProtocolVersion))
	case !strings.Contains(p.Prompt.User, "{question}") && !strings.Contains(p.Prompt.System, "{question}"):
		return bad("prompt", "never shows {question}")
	case !strings.Contains(p.Prompt.Observation, "{observation}"):
		return bad("prompt.observation", "has no {observation}")
	case p.Observation.Format != sqlenv.ObservationFormat:
		return bad("observation.format", fmt.Sprintf("is %q; this rlgate renders %q", p.Observation.Format, sqlenv.ObservationFormat))
	case p.Observation.MaxRows < 1 || p.Observation.MaxCellRunes < 1:
		return bad("observation", "needs max_rows and max_cell_runes of at least 1")
	case p.MaxTurns < 1:
		return bad("max_turns", "must be at least 1")
	case p.MaxTokensPerTurn < 1:
		return bad("max_tokens_per_turn", "must be at least 1")
	case p.ContextTokens <= p.MaxTokensPerTurn:
		return bad("context_tokens", "must exceed max_tokens_per_turn")
	case p.SQLBudget < 0 || p.FormatRetries < 0:
		return bad("sql_budget and format_retries", "cannot be negative")
	case p.SQLTimeoutMS < 1 || p.SQLMaxRows < 1:
		return bad("sql_timeout_ms and sql_max_rows", "must be at least 1")
	case len(p.Stop) == 0:
		return bad("stop", "is empty; the turn protocol needs </sql> and </solution>")
	case p.Sampling.N < 1:
		return bad("sampling.n", "must be at least 1")
	case p.Sampling.Temperature < 0 || p.Sampling.TopP <= 0 || p.Sampling.TopP > 1:
		return bad("sampling", "needs temperature >= 0 and 0 < top_p <= 1")
	}
	return nil
}

// Digest is the BLAKE3 of the protocol's canonical JSON.
func (p *Protocol) Digest() (ledger.Digest, error) {
	b, err := ledger.CanonicalJSON(p)
	if err != nil {
		return ledger.Digest{}, fmt.Errorf("protocol digest: %w", err)
	}
	return ledger.Sum(b), nil
}

// SystemPrompt renders the system message for t.
func (p *Protocol) SystemPrompt(t *tasks.Task) string {
	return p.taskReplacer(t).Replace(p.Prompt.System)
}

// UserPrompt renders the first user message for t.
func (p *Protocol) UserPrompt(t *tasks.Task) string { return p.taskReplacer(t).Replace(p.Prompt.User) }

// Messages renders the messages an episode of t starts from: the system
// message and the first user message. Rollout, synthesis, RL data export
// and rlgate data render all show a policy these.
func (p *Protocol) Messages(t *tasks.Task) []Message {
	return []Message{{Role: "system", Content: p.SystemPrompt(t)}, {Role: "user", Content: p.UserPrompt(t)}}
}

// WithoutExamples returns p with its example block dropped, as the seeds'
// rl2sft step drops it: {examples} then renders empty.
func (p Protocol) WithoutExamples() Protocol {
	p.Prompt.Examples = ""
	return p
}

func (p *Protocol) taskReplacer(t *tasks.Task) *strings.Replacer {
	knowledge := t.Evidence
	if strings.TrimSpace(knowledge) == "" {
		knowledge = p.Prompt.NoKnowledge
	}
	return strings.NewReplacer("{db_details}", t.Schema, "{external_knowledge}", knowledge, "{question}", t.Question,
		"{max_turns}", strconv.Itoa(p.MaxTurns), "{examples}", p.Prompt.Examples)
}

// ObservationMessage renders the user turn that answers an <sql> turn.
func (p *Protocol) ObservationMessage(observation string, turnsLeft int) string {
	return strings.NewReplacer("{observation}", observation, "{turns_left}", strconv.Itoa(turnsLeft)).Replace(p.Prompt.Observation)
}

// CorrectionMessage renders the user turn that answers a malformed reply.
func (p *Protocol) CorrectionMessage(hint string, turnsLeft int) string {
	return strings.NewReplacer("{hint}", hint, "{turns_left}", strconv.Itoa(turnsLeft)).Replace(p.Prompt.Correction)
}

// observationOptions is the profile as the renderer takes it.
func (p *Protocol) observationOptions() sqlenv.ObservationOptions {
	return sqlenv.ObservationOptions{MaxRows: p.Observation.MaxRows, MaxCellRunes: p.Observation.MaxCellRunes}
}

// SamplingOverride holds sampling values given beside a protocol (rollout
// --n, --temperature, --top-p, --seed); a nil field leaves the protocol's.
type SamplingOverride struct {
	N           *int
	Temperature *float64
	TopP        *float64
	Seed        *int64
}

// Apply sets o's values over p's sampling and validates the result, so an
// override that makes the protocol invalid is an ErrProtocol.
func (o SamplingOverride) Apply(p *Protocol) error {
	if o.N != nil {
		p.Sampling.N = *o.N
	}
	if o.Temperature != nil {
		p.Sampling.Temperature = *o.Temperature
	}
	if o.TopP != nil {
		p.Sampling.TopP = *o.TopP
	}
	if o.Seed != nil {
		p.Sampling.Seed = *o.Seed
	}
	return p.Validate()
}
