package rollout_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/tasks"
)

func TestDefaultProtocol(t *testing.T) {
	p := rollout.DefaultProtocol()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.MaxTurns != 6 || p.SQLTimeoutMS != 10_000 || p.Observation.MaxRows != 50 || p.FormatRetries != 3 {
		t.Errorf("default budgets %+v", p)
	}
	d1, _ := p.Digest()
	p.Sampling.Seed = 1
	d2, _ := p.Digest()
	if d1 == d2 {
		t.Error("the digest ignores the seed")
	}
	tk := tasks.Task{ID: "x-0", DBID: "db", Question: "How many singers?", Schema: "CREATE TABLE singer(id);"}
	sys, user := p.SystemPrompt(&tk), p.UserPrompt(&tk)
	if !strings.Contains(sys, "at most 6 turns") || !strings.Contains(user, "CREATE TABLE singer(id);") ||
		!strings.Contains(user, "External knowledge:\nNone") || !strings.HasSuffix(user, "Question:\nHow many singers?") {
		t.Errorf("prompts:\n%s\n---\n%s", sys, user)
	}
	if got := p.ObservationMessage("STATUS: OK", 2); !strings.Contains(got, "STATUS: OK\n</observation>") || !strings.Contains(got, "2 turns left") {
		t.Errorf("observation message %q", got)
	}
}

func TestLoadProtocol(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := rollout.LoadProtocol(write("p.yaml", "version: rlgate.protocol/1\nmax_turns: 4\nstop: [\"</solution>\"]\nsampling:\n  n: 8\n  temperature: 0.7\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := rollout.DefaultProtocol()
	if p.MaxTurns != 4 || p.Sampling.N != 8 || p.Sampling.Temperature != 0.7 || p.Sampling.TopP != 1 || p.Prompt != def.Prompt ||
		len(p.Stop) != 1 {
		t.Errorf("yaml over the default: %+v", p)
	}
	if p, err := rollout.LoadProtocol(write("p.json", `{"version": "rlgate.protocol/1", "sql_budget": 2}`)); err != nil || p.SQLBudget != 2 {
		t.Errorf("json: %v %+v", err, p)
	}
	for name, text := range map[string]string{
		"unknown-field.yaml":   "version: rlgate.protocol/1\nmax_turn: 4\n",
		"unknown-field.json":   `{"max_turn": 4}`,
		"other-version.yaml":   "version: rlgate.protocol/9\n",
		"no-question.yaml":     "prompt:\n  user: hello\n",
		"context-too-big.yaml": "max_tokens_per_turn: 9000\ncontext_tokens: 8000\n",
		"bad-top-p.yaml":       "sampling:\n  top_p: 0\n",
	} {
		if _, err := rollout.LoadProtocol(write(name, text)); !errors.Is(err, rollout.ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
}

func FuzzBodyRoundTrip(f *testing.F) {
	f.Add([]byte(`{"choices": []}`))
	f.Add([]byte("\xff\xfe<think>"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := rollout.Body(b).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back rollout.Body
		if err := back.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		if string(back) != string(b) {
			t.Fatalf("%q came back as %q", b, back)
		}
	})
}

func FuzzParseEpisodeUser(f *testing.F) {
	f.Add("spider-0001", 3)
	f.Add("a#b", 0)
	f.Fuzz(func(t *testing.T, task string, sample int) {
		if task == "" || sample < 0 {
			return
		}
		gotTask, gotSample, err := rollout.ParseEpisodeUser(rollout.EpisodeUser(task, sample))
		if err != nil || gotTask != task || gotSample != sample {
			t.Fatalf("%q#%d read back as %q#%d (%v)", task, sample, gotTask, gotSample, err)
		}
	})
}
