package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/synth"
	"github.com/rlgate/rlgate/stages/tasks"
	"github.com/rlgate/rlgate/workflow/serve"
)

// synthKind is what the scripted teacher does with sample s of the task
// at index i: answer the gold at once (0), probe with <sql> and then
// answer the gold (1), answer wrong (2), or break the format once and then
// answer the gold (3).
func synthKind(i, s int) int { return (i + s) % 4 }

// synthTeacher is a scripted endpoint playing synthKind from the gold.
func synthTeacher(t *testing.T, data string) *rollouttest.Server {
	t.Helper()
	golds, err := gold.Read(filepath.Join(data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gold.Gold{}
	for _, g := range golds {
		byID[g.ID] = g
	}
	return rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		g := byID[r.TaskID]
		answer := "<think>so</think><solution>" + g.SQL + "</solution>"
		switch kind := synthKind(g.Index, r.Sample); {
		case kind == 1 && r.Turn == 0:
			return rollouttest.Reply{Content: "<think>look first</think><sql>SELECT count(*) FROM sqlite_master</sql>"}
		case kind == 2:
			answer = "<think>guess</think><solution>SELECT 'not the answer'</solution>"
		case kind == 3 && r.Turn == 0:
			answer = "the answer is obvious"
		}
		return rollouttest.Reply{Content: answer}
	})
}

// synthRead reads the three files a synthesis wrote.
func synthRead(t *testing.T, out string) ([]synth.Trajectory, []synth.GoldRecord, []string) {
	t.Helper()
	trajs, err := jsonl.Read[synth.Trajectory](filepath.Join(out, synth.TrajectoriesFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	golds, err := jsonl.Read[synth.GoldRecord](filepath.Join(out, synth.GoldFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, synth.ExampleIDsFile))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		t.Fatal(err)
	}
	return trajs, golds, ids
}

// TestSynthRoundTrip runs synth over 300 Spider questions, 2 samples each,
// against a scripted teacher whose answers are known, and checks that it
// keeps exactly the passing trajectories, in the seeds' record shape, with
// the gold apart; then that the same command finds everything recorded and
// writes identical files.
func TestSynthRoundTrip(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := synthTeacher(t, data)
	out := filepath.Join(t.TempDir(), "sft")
	args := []string{"--ledger", ldir, "synth", "--tasks", data, "--endpoint", srv.URL + "/v1", "--model", "teacher",
		"--samples-per-question", "2", "--num-examples", "300", "--seed", "42", "--out", out, "--json"}
	code, stdout, errOut := rlgate(t, args...)
	if code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errOut)
	}
	var s synth.Summary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	trajs, golds, ids := synthRead(t, out)

	all, err := tasks.Read(filepath.Join(data, dataset.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for _, tk := range all {
		index[tk.ID] = tk.Index
	}
	if len(ids) != 300 || !slices.IsSortedFunc(ids, func(a, b string) int { return index[a] - index[b] }) {
		t.Fatalf("example_ids.json: %d ids, in file order %v", len(ids), slices.IsSortedFunc(ids, func(a, b string) int { return index[a] - index[b] }))
	}
	type key struct {
		ID     string
		Sample int
	}
	var want, got []key
	wantGold := map[string]bool{}
	for _, id := range ids {
		for s := range 2 {
			if synthKind(index[id], s) != 2 {
				want = append(want, key{id, s})
				wantGold[id] = true
			}
		}
	}
	allGold, err := gold.Read(filepath.Join(data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	goldSQL := map[string]string{}
	for _, g := range allGold {
		goldSQL[g.ID] = g.SQL
	}
	for _, tr := range trajs {
		got = append(got, key{tr.ExampleID, tr.SampleID})
		last := tr.Turns[len(tr.Turns)-1]
		if !last.IsFinal || last.Solution != goldSQL[tr.ExampleID] || tr.FinalSQL() != last.Solution || tr.DBID == "" ||
			!strings.Contains(tr.BasePrompt, "Question:") || !strings.Contains(tr.System, "<solution>") {
			t.Errorf("trajectory %s#%d: %+v", tr.ExampleID, tr.SampleID, tr)
		}
		switch synthKind(index[tr.ExampleID], tr.SampleID) {
		case 1: // the probe, its observation as the policy saw it, then the answer
			if len(tr.Turns) != 2 || tr.Turns[0].SQL == "" || tr.Turns[0].IsFinal || tr.Turns[0].Turn != 0 || tr.Turns[1].Turn != 1 ||
				!strings.HasPrefix(tr.Turns[0].Observation, "<observation>\nSTATUS: OK") || !strings.Contains(tr.Turns[0].Observation, "You have 5 turns left") {
				t.Errorf("probing trajectory %s#%d: %+v", tr.ExampleID, tr.SampleID, tr.Turns)
			}
		case 3: // the malformed reply is left out
			if len(tr.Turns) != 1 || tr.Turns[0].Turn != 1 {
				t.Errorf("trajectory after a format correction %s#%d: %+v", tr.ExampleID, tr.SampleID, tr.Turns)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept trajectories (-passing +kept):\n%s", diff)
	}
	if s.Kept != len(want) || s.Episodes != 600 || s.Examples != 300 || s.ExamplesKept != len(wantGold) || s.Status != "ok" {
		t.Errorf("summary %+v; want %d kept", s, len(want))
	}
	for _, g := range golds {
		if !wantGold[g.ExampleID] || g.GoldSQL != goldSQL[g.ExampleID] {
			t.Errorf("gold record %+v", g)
		}
	}
	if len(golds) != len(wantGold) {
		t.Errorf("%d gold records, want %d", len(golds), len(wantGold))
	}
	raw, err := os.ReadFile(filepath.Join(out, synth.TrajectoriesFile))
	if err != nil {
		t.Fatal(err)
	}
	// The policy-side record holds the seeds' fields and nothing else.
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range rec {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if diff := cmp.Diff([]string{"base_prompt", "db_id", "example_id", "sample_id", "system", "turns"}, keys); diff != "" {
			t.Fatalf("trajectories.jsonl line %d fields (-want +got):\n%s", i+1, diff)
		}
	}

	// The same command again: nothing is played, the grading is reused,
	// and the files come out identical to the recorded ones.
	before := srv.Requests.Load()
	code, stdout, errOut = rlgate(t, args...)
	if code != 0 {
		t.Fatalf("synth again: exit %d: %s", code, errOut)
	}
	var again synth.Summary
	if err := json.Unmarshal([]byte(stdout), &again); err != nil {
		t.Fatal(err)
	}
	if again.Status != "complete" || again.Rollout.Status != "complete" || srv.Requests.Load() != before || !cmp.Equal(again.Outputs, s.Outputs) {
		t.Errorf("second synth: status %s, rollout %s, %d requests more, outputs %v, want %v",
			again.Status, again.Rollout.Status, srv.Requests.Load()-before, again.Outputs, s.Outputs)
	}

	// Another seed samples other questions.
	other := filepath.Join(t.TempDir(), "sft")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "synth", "--tasks", data, "--endpoint", srv.URL+"/v1", "--model", "teacher",
		"--samples-per-question", "1", "--num-examples", "300", "--seed", "7", "--out", other); code != 0 {
		t.Fatalf("synth --seed 7: exit %d: %s", code, errOut)
	}
	if _, _, ids7 := synthRead(t, other); len(ids7) != 300 || slices.Equal(ids7, ids) {
		t.Errorf("--seed 7 sampled %d ids, the same as --seed 42: %v", len(ids7), slices.Equal(ids7, ids))
	}
	if code, _, _ := rlgate(t, "--ledger", ldir, "verify"); code != 0 {
		t.Error("verify after synth failed")
	}
}

// TestSynthFailedCommand: a synthesis whose endpoint fails some requests
// exits 1, printing the rollout's summary before the error, which counts
// the unfinished episodes. How it resumes and what it writes is
// workflow/evaluate's TestSynthResume.
func TestSynthFailedCommand(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if strings.HasSuffix(r.TaskID, "3") {
			return rollouttest.Reply{Status: 503}
		}
		return rollouttest.Reply{Content: "<think>so</think><solution>SELECT 1</solution>"}
	})
	code, stdout, errOut := rlgate(t, "--ledger", ldir, "synth", "--tasks", data, "--endpoint", srv.URL+"/v1", "--model", "teacher",
		"--samples-per-question", "1", "--num-examples", "40", "--out", filepath.Join(t.TempDir(), "sft"), "--max-attempts", "1", "--run", "s1")
	if code != exitError || !strings.Contains(errOut, "unfinished") || !strings.Contains(stdout, "rlgate: rollout s1 failed: ") {
		t.Fatalf("synth with failing requests: exit %d: %s%s", code, stdout, errOut)
	}
}

// TestSynthThroughServeReplay synthesises once against the scripted
// teacher, serves that rollout with serve-replay, and synthesises again
// against the replay under another run: the files come out byte-identical.
func TestSynthThroughServeReplay(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	srv := synthTeacher(t, data)
	synthesise := func(run, endpoint string) synth.Summary {
		t.Helper()
		code, out, errOut := rlgate(t, "--ledger", ldir, "synth", "--tasks", data, "--endpoint", endpoint, "--model", "teacher", "--run", run,
			"--samples-per-question", "2", "--num-examples", "120", "--out", filepath.Join(t.TempDir(), run), "--json")
		if code != 0 {
			t.Fatalf("synth %s: exit %d: %s", run, code, errOut)
		}
		var s synth.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	recorded := synthesise("teacher-run", srv.URL+"/v1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve.ServeReplay(ctx, ldir, "teacher-run", "127.0.0.1:0", true, out)
	}()
	var rs serve.Replaying
	for deadline := time.Now().Add(10 * time.Second); json.Unmarshal(out.Bytes(), &rs) != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("serve-replay printed no address: %q", out.Bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	replayed := synthesise("replay-run", rs.URL)
	cancel()
	<-done
	if recorded.Kept == 0 || replayed.Rollout.Ran != 240 || !cmp.Equal(recorded.Outputs, replayed.Outputs) {
		t.Errorf("synth through serve-replay: kept %d, played %d; outputs %v, recorded %v", replayed.Kept, replayed.Rollout.Ran, replayed.Outputs, recorded.Outputs)
	}
}
