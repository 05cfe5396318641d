package rollout

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is the body of a /v1/chat/completions request as rollout
// sends it. User carries "<task id>#<sample>", which OpenAI-compatible
// servers accept and ignore and which the replay endpoint reads to find
// the recorded episode; it holds nothing from the gold side.
//
// NB: these bytes are recorded and, by the replay endpoint, compared by
// digest; the field order is part of that.
type ChatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens"`
	Temperature float64   `json:"temperature"`
	TopP        float64   `json:"top_p"`
	Seed        int64     `json:"seed"`
	N           int       `json:"n"`
	Stop        []string  `json:"stop"`
	User        string    `json:"user"`
}

// EpisodeUser is the ChatRequest.User of a (task, sample).
func EpisodeUser(taskID string, sample int) string { return taskID + "#" + strconv.Itoa(sample) }

// ParseEpisodeUser reads what EpisodeUser writes.
func ParseEpisodeUser(s string) (taskID string, sample int, err error) {
	i := strings.LastIndexByte(s, '#')
	if i > 0 {
		if sample, err = strconv.Atoi(s[i+1:]); err == nil && sample >= 0 {
			return s[:i], sample, nil
		}
	}
	return "", 0, fmt.Errorf("parse user %q: want <task id>#<sample>", s)
}

// AssistantTurns counts the assistant messages of a request: the index of
// the reply it asks for within its episode.
func (r *ChatRequest) AssistantTurns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// ChatResponse is the part of a /v1/chat/completions response rollout
// reads: the first choice's text and finish reason, and token usage when
// the server reports it.
type ChatResponse struct {
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Choice is one completion of a ChatResponse.
type Choice struct {
	Index        int           `json:"index"`
	Message      ChoiceMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// ChoiceMessage is a completion's message; Content is null in some
// servers' replies to an empty generation.
type ChoiceMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
}

// Usage is the token count a server reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Body is an HTTP body kept byte for byte in a trajectory: JSON text when
// it is valid UTF-8, else {"base64": "..."}.
type Body []byte

// MarshalJSON writes the body as a JSON string, or as base64 when it is not
// UTF-8 and a string would not keep its bytes.
func (b Body) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return marshal(string(b))
	}
	return json.Marshal(struct {
		Base64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString(b)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Body) UnmarshalJSON(raw []byte) error {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		*b = Body(s)
		return nil
	}
	var enc struct {
		Base64 string `json:"base64"`
	}
	if err := json.Unmarshal(raw, &enc); err != nil {
		return fmt.Errorf("body: want a string or {\"base64\": ...}: %w", err)
	}
	dec, err := base64.StdEncoding.DecodeString(enc.Base64)
	*b = dec
	return err
}

// estimateTokens is the token count used when a server reports none: a
// quarter of the bytes, rounded up.
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

// marshal is json.Marshal without HTML escaping: requests, replies and
// trajectories are full of <think> and <sql>, which would otherwise
// become \u003cthink\u003e.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
