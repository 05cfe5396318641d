package refpolicy

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/rlgate/rlgate/stages/rollout"
)

// ModelName is the model id the server reports and answers to.
const ModelName = "rlgate-refpolicy"

// Handler serves pol as an OpenAI-compatible endpoint: GET /v1/models
// lists one model (ModelName, with the checkpoint's identity), POST
// /v1/chat/completions answers the conversation with one turn (Reply) and
// reports usage (Tokens of the prompt messages and of the reply). The
// request's temperature, seed and user field choose the sampling
// (Sampler); the same request always gets the same reply.
func Handler(pol *Model, identity string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
			{"id": ModelName, "object": "model", "owned_by": "rlgate", "identity": identity},
		}})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req rollout.ChatRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"message": "read request: " + err.Error(), "type": "invalid_request_error"}})
			return
		}
		if len(req.Messages) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"message": "messages is empty", "type": "invalid_request_error"}})
			return
		}
		reply := pol.Reply(req.Messages, Sampler{Temperature: req.Temperature, Seed: uint64(req.Seed), Stream: StreamOf(req.User)})
		prompt := 0
		for _, m := range req.Messages {
			prompt += Tokens(m.Content)
		}
		finish := "stop"
		if req.MaxTokens > 0 && Tokens(reply) > req.MaxTokens {
			finish = "length"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id":      "chatcmpl-refpolicy",
			"object":  "chat.completion",
			"model":   ModelName,
			"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": reply}, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": prompt, "completion_tokens": Tokens(reply), "total_tokens": prompt + Tokens(reply)},
		})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write([]byte(b.String()))
}
