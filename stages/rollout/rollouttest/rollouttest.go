// Package rollouttest gives tests and benchmarks a scripted
// OpenAI-compatible endpoint: a loopback HTTP server whose replies a Go
// function chooses per request, with faults on demand (delays, error
// statuses, dropped connections, connections reset in the middle of a
// body, malformed JSON, missing usage), and an address where nothing
// listens (Refusing).
package rollouttest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
)

// Request is a chat request as a script sees it: the body, and the
// episode, turn and attempt it belongs to.
type Request struct {
	rollout.ChatRequest
	TaskID  string
	Sample  int
	Turn    int // assistant messages in the request
	Attempt int // 1 for the first time this (task, sample, turn) is asked, 2 for a retry, ...
}

// Question returns the question of the default protocol's first user
// message (what follows "Question:"), for scripts that answer by question.
func (r *Request) Question() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			if i := strings.LastIndex(m.Content, "Question:\n"); i >= 0 {
				return m.Content[i+len("Question:\n"):]
			}
			return m.Content
		}
	}
	return ""
}

// Fault is a way for a reply to go wrong on the wire.
type Fault int

// The faults.
const (
	NoFault   Fault = iota
	Drop            // close the connection without a response
	Malformed       // answer 200 with a body that is not JSON
	Reset           // answer 200, send half the body it announced, close the connection
)

// Reply is a script's answer to one request.
type Reply struct {
	Content      string
	FinishReason string        // default "stop"
	Status       int           // default 200; any other answers with an error body
	Delay        time.Duration // wait before answering
	Fault        Fault
	NoUsage      bool           // leave usage out of the response
	Usage        *rollout.Usage // default: a quarter of the prompt and reply bytes
}

// Script chooses the reply to a request. It is called concurrently.
type Script func(*Request) Reply

// Server is a scripted endpoint; URL is its root. It answers GET
// /v1/models with one model, "scripted", without a model identity unless
// ReportModels sets the list; or 404 after HideModels.
type Server struct {
	*httptest.Server
	Requests atomic.Int64 // chat completion requests
	Probes   atomic.Int64 // models requests

	hideModels atomic.Bool
	models     atomic.Value // string: the models reply ReportModels set
	mu         sync.Mutex
	attempts   map[string]int
}

// HideModels makes /v1/models answer 404, as some servers do.
func (s *Server) HideModels() { s.hideModels.Store(true) }

// ReportModels makes /v1/models answer 200 with reply, as written: a
// list whose entries carry an "identity" (as rlgate serve-policy's do),
// or anything a server might send.
func (s *Server) ReportModels(reply string) { s.models.Store(reply) }

// Refusing returns the root URL of a loopback port where nothing listens:
// connecting to it is refused.
func Refusing(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// New starts a scripted endpoint, closed when the test ends.
func New(t testing.TB, script Script) *Server {
	s := &Server{attempts: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, script) }))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, script Script) {
	if strings.HasSuffix(r.URL.Path, "/models") {
		s.Probes.Add(1)
		if s.hideModels.Load() {
			http.NotFound(w, r)
			return
		}
		reply, _ := s.models.Load().(string)
		if reply == "" {
			reply = `{"object": "list", "data": [{"id": "scripted", "object": "model"}]}`
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(reply))
		return
	}
	s.Requests.Add(1)
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req.ChatRequest); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var err error
	if req.TaskID, req.Sample, err = rollout.ParseEpisodeUser(req.User); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Turn = req.AssistantTurns()
	key := fmt.Sprintf("%s#%d/%d", req.TaskID, req.Sample, req.Turn)
	s.mu.Lock()
	s.attempts[key]++
	req.Attempt = s.attempts[key]
	s.mu.Unlock()

	rep := script(&req)
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case rep.Fault == Drop:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case rep.Fault == Reset:
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err == nil {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"choices\": [{\"message\": ")
			buf.Flush()
			conn.Close()
		}
		return
	case rep.Fault == Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices": [{"message": {"content": "<think>`))
		return
	case rep.Status != 0 && rep.Status != http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, `{"error": {"message": "scripted status %d"}}`, rep.Status)
		return
	}
	if rep.FinishReason == "" {
		rep.FinishReason = "stop"
	}
	content := rep.Content
	resp := rollout.ChatResponse{Choices: []rollout.Choice{{Message: rollout.ChoiceMessage{Role: "assistant", Content: &content}, FinishReason: rep.FinishReason}}}
	if !rep.NoUsage {
		resp.Usage = rep.Usage
		if resp.Usage == nil {
			prompt := 0
			for _, m := range req.Messages {
				prompt += len(m.Content)
			}
			resp.Usage = &rollout.Usage{PromptTokens: (prompt + 3) / 4, CompletionTokens: (len(content) + 3) / 4}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(resp)
}

// ThreeTurns is the benchmark policy: two <sql> probes of the task's
// database, then a <solution> chosen by solve (a fixed query when nil).
// Like vLLM it returns replies without the stop string that ended them.
func ThreeTurns(solve func(*Request) string) Script {
	return func(r *Request) Reply {
		switch r.Turn {
		case 0:
			return Reply{Content: "<think>How many tables are there?</think>\n<sql>SELECT count(*) FROM sqlite_master WHERE type = 'table'"}
		case 1:
			return Reply{Content: "<think>Which tables?</think>\n<sql>SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 5"}
		}
		sol := "SELECT count(*) FROM sqlite_master"
		if solve != nil {
			sol = solve(r)
		}
		return Reply{Content: "<think>I can answer now.</think>\n<solution>" + sol}
	}
}

// Episodes returns a run's episodes keyed by EpisodeUser(task, sample),
// with the timings, which no two runs share, zeroed: two runs against a
// deterministic endpoint give equal maps. An episode recorded twice fails
// the test.
func Episodes(t testing.TB, l *ledger.Ledger, run string) map[string]rollout.Episode {
	t.Helper()
	eps, err := rollout.ReadEpisodes(context.Background(), l, run)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rollout.Episode{}
	for _, ep := range eps {
		ep.Usage.LatencyMS, ep.Usage.SQLMS = 0, 0
		for i := range ep.Turns {
			ep.Turns[i].LatencyMS, ep.Turns[i].SQLMS = 0, 0
			for j := range ep.Turns[i].Retried {
				ep.Turns[i].Retried[j].LatencyMS = 0
			}
		}
		key := rollout.EpisodeUser(ep.TaskID, ep.Sample)
		if _, dup := out[key]; dup {
			t.Fatalf("episode %s recorded twice", key)
		}
		out[key] = ep
	}
	return out
}

// EpisodesDiff is cmp.Diff(want, got, opts...) of two runs' Episodes, as
// one diff per episode that differs (or that one run lacks), in key
// order; "" when the runs played alike. cmp walks every request body byte
// by byte, seconds for a run of a hundred episodes, so an episode that is
// reflect.DeepEqual in both (and then equal under any option) is passed
// over without it.
func EpisodesDiff(want, got map[string]rollout.Episode, opts ...cmp.Option) string {
	keys := slices.Collect(maps.Keys(want))
	for key := range got {
		if _, ok := want[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, key := range keys {
		w, inWant := want[key]
		g, inGot := got[key]
		switch {
		case !inGot:
			fmt.Fprintf(&b, "episode %s: missing\n", key)
		case !inWant:
			fmt.Fprintf(&b, "episode %s: not wanted\n", key)
		case !reflect.DeepEqual(w, g):
			if d := cmp.Diff(w, g, opts...); d != "" {
				fmt.Fprintf(&b, "episode %s (-want +got):\n%s", key, d)
			}
		}
	}
	return b.String()
}
