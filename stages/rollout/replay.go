package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// ReplayHeader is the response header in which the replay endpoint says
// whether the request matched the recorded one byte for byte ("exact") or
// only by (task, sample, turn) ("diverged").
const ReplayHeader = "X-Rlgate-Replay"

// Replay is an OpenAI-compatible /v1/chat/completions handler that answers
// with a recorded run's responses. A request names its episode in the
// user field ("<task id>#<sample>", as rollout sends it) and its turn by
// the number of assistant messages it carries; the reply is the recorded
// response of that turn, status and body byte for byte, or a dropped
// connection where the recorded attempt got no response. A pair served is
// its finished episode, or its last unfinished one, whose transport
// failure is then served again. Replaying a run with the same protocol,
// tasks and model therefore reproduces it. Its models route reports the
// run's model identity when the run recorded it as the server's: the
// replies are that model's; an identity the user only asserted is not
// passed on as confirmed.
type Replay struct {
	run      string
	model    string
	identity *ledger.Digest // reported; nil unless the run recorded a server-reported one
	episodes int
	turns    map[replayKey]replayTurn
}

type replayKey struct {
	task         string
	sample, turn int
}

type replayTurn struct {
	status  int
	body    []byte
	request ledger.Digest
}

// NewReplay loads every recorded turn of run.
func NewReplay(ctx context.Context, l *ledger.Ledger, run string) (*Replay, error) {
	start, err := ReadStart(ctx, l, run)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", run, err)
	}
	refs, err := readRefs(ctx, l, run)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", run, err)
	}
	// The last reference of a pair is its finished episode, if it has one.
	last := map[episodeKey]int{}
	for i, r := range refs {
		last[episodeKey{r.TaskID, r.Sample}] = i
	}
	latest := refs[:0]
	for i, r := range refs {
		if last[episodeKey{r.TaskID, r.Sample}] == i {
			latest = append(latest, r)
		}
	}
	eps, err := readEpisodes(l, run, latest)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", run, err)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("replay %s: %w: the run recorded no episodes", run, ErrReplay)
	}
	r := &Replay{run: run, model: start.Model, episodes: len(eps), turns: map[replayKey]replayTurn{}}
	if start.Source() == IdentityServer {
		r.identity = start.ModelIdentity
	}
	for _, ep := range eps {
		for _, t := range ep.Turns {
			r.turns[replayKey{ep.TaskID, ep.Sample, t.Index}] = replayTurn{status: t.Status, body: t.Response, request: ledger.Sum(t.Request)}
		}
	}
	return r, nil
}

// Episodes returns the number of episodes the replay holds.
func (r *Replay) Episodes() int { return r.episodes }

// Model returns the model the run was recorded with.
func (r *Replay) Model() string { return r.model }

func (r *Replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.URL.Path == "/v1/models" || req.URL.Path == "/models":
		m := map[string]any{"id": r.model, "object": "model", "owned_by": "rlgate-replay"}
		if r.identity != nil {
			m["identity"] = r.identity.String()
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{m}})
		return
	case !strings.HasSuffix(req.URL.Path, "/chat/completions"):
		replayError(w, http.StatusNotFound, "no such path "+req.URL.Path+"; POST /v1/chat/completions")
		return
	case req.Method != http.MethodPost:
		replayError(w, http.StatusMethodNotAllowed, "POST /v1/chat/completions")
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		replayError(w, http.StatusBadRequest, "read request: "+err.Error())
		return
	}
	var cr ChatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		replayError(w, http.StatusBadRequest, "malformed request: "+err.Error())
		return
	}
	task, sample, err := ParseEpisodeUser(cr.User)
	if err != nil {
		replayError(w, http.StatusBadRequest, err.Error()+"; the replay endpoint finds the episode by the user field rollout sends")
		return
	}
	turn := cr.AssistantTurns()
	t, ok := r.turns[replayKey{task, sample, turn}]
	if !ok {
		replayError(w, http.StatusNotFound, fmt.Sprintf("run %s recorded no turn %d of task %s sample %d", r.run, turn, task, sample))
		return
	}
	if t.status == 0 { // the recorded attempt got no response: drop the connection
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	match := "diverged"
	if ledger.Sum(body) == t.request {
		match = "exact"
	}
	w.Header().Set(ReplayHeader, match)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(t.status)
	w.Write(t.body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// replayError answers in the OpenAI error shape.
func replayError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "rlgate_replay"}})
}
