package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/tasks"
	"github.com/rlgate/rlgate/workflow/data"
)

// TestDataRenderIsWhatRolloutSends renders the Spider tasks with a
// protocol that carries an example block and compares every prompt with
// the first request a rollout under the same protocol recorded; with
// --drop-examples the block is gone and nothing else changes.
func TestDataRenderIsWhatRolloutSends(t *testing.T) {
	t.Parallel()
	ldir, imp := spiderLedger(t)
	dir := t.TempDir()
	proto := filepath.Join(dir, "protocol.yaml")
	const example = "Example:\n<think>count them</think>\n<solution>SELECT count(*) FROM singer</solution>"
	if err := os.WriteFile(proto, []byte("version: rlgate.protocol/1\nprompt:\n  system: |-\n    Answer in SQLite.\n\n    {examples}\n\n    Schema:\n    {db_details}\n  user: |-\n    {external_knowledge}\n    {question}\n  examples: |-\n    "+
		strings.ReplaceAll(example, "\n", "\n    ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := rollouttest.New(t, func(*rollouttest.Request) rollouttest.Reply {
		return rollouttest.Reply{Content: "<think>t</think><solution>SELECT 1</solution>"}
	})
	if code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", imp, "--endpoint", srv.URL+"/v1", "--model", "m", "--run", "r",
		"--protocol", proto, "--limit", "50"); code != 0 {
		t.Fatalf("rollout: exit %d: %s", code, errOut)
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := rollout.ReadEpisodes(context.Background(), l, "r")
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string][]rollout.Message{}
	for _, ep := range eps {
		var req rollout.ChatRequest
		if err := json.Unmarshal(ep.Turns[0].Request, &req); err != nil {
			t.Fatal(err)
		}
		sent[ep.TaskID] = req.Messages
	}

	out := filepath.Join(dir, "prompts.jsonl")
	code, stdout, errOut := rlgate(t, "--ledger", ldir, "data", "render", "--tasks", imp, "--protocol", proto, "--out", out, "--json")
	if code != 0 {
		t.Fatalf("data render: exit %d: %s", code, errOut)
	}
	var s data.Rendered
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	rendered, err := jsonl.Read[data.Prompt](out, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := tasks.Read(filepath.Join(imp, dataset.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rendered) != len(all) || s.Tasks != len(all) || s.Seq == 0 {
		t.Fatalf("%d prompts rendered, summary %+v", len(rendered), s)
	}
	for _, r := range rendered[:50] {
		if diff := cmp.Diff(sent[r.ID], r.Messages); diff != "" {
			t.Fatalf("task %s: rendered prompt differs from the one sent (-sent +rendered):\n%s", r.ID, diff)
		}
	}
	if !strings.Contains(rendered[0].Messages[0].Content, example) {
		t.Errorf("the example block is not in the system prompt: %q", rendered[0].Messages[0].Content)
	}

	dropped := filepath.Join(dir, "sft-prompts.jsonl")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "render", "--tasks", imp, "--protocol", proto, "--drop-examples", "--out", dropped); code != 0 {
		t.Fatalf("data render --drop-examples: exit %d: %s", code, errOut)
	}
	without, err := jsonl.Read[data.Prompt](dropped, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range without {
		want := rendered[i]
		want.Messages = []rollout.Message{{Role: "system", Content: strings.Replace(want.Messages[0].Content, example, "", 1)}, want.Messages[1]}
		if diff := cmp.Diff(want, r); diff != "" {
			t.Fatalf("task %s with --drop-examples (-want +got):\n%s", r.ID, diff)
		}
	}
}
