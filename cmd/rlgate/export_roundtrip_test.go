package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/synth"
	"github.com/rlgate/rlgate/stages/tasks"
)

// exportSynthesised returns a ledger of its own, forked from one where synth
// ran over 300 Spider questions against the scripted teacher of the synth
// tests, and the dataset and synthesis directories that ledger names. The
// synthesis runs once per test binary (exportFixture); each test appends to
// its own copy of the ledger, and the two directories, which the tests only
// read, stay shared, as gateExperiment.fork does.
func exportSynthesised(t *testing.T) (ldir, data, out string) {
	t.Helper()
	exportFixture.once.Do(func() { exportFixture.built = buildExportFixture(t) })
	if !exportFixture.built {
		t.Fatal("the synthesis the export tests share failed to build (see the first test that asked for it)")
	}
	ldir = filepath.Join(t.TempDir(), "ledger")
	if err := os.CopyFS(ldir, os.DirFS(exportFixture.ledger)); err != nil {
		t.Fatal(err)
	}
	return ldir, exportFixture.data, exportFixture.synth
}

// exportFixture is the synthesis exportSynthesised forks, built under
// root, which TestMain removes.
var exportFixture struct {
	once                      sync.Once
	built                     bool
	root, ledger, data, synth string
}

// buildExportFixture initialises a ledger, imports Spider dev and runs
// synth, all through the CLI, under a directory that outlives t.
func buildExportFixture(t *testing.T) bool {
	t.Helper()
	root, err := os.MkdirTemp("", "rlgate-export-fixture-")
	if err != nil {
		t.Error(err)
		return false
	}
	x := &exportFixture
	x.root, x.ledger, x.data, x.synth = root, filepath.Join(root, "ledger"), filepath.Join(root, "spider"), filepath.Join(root, "synth")
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "init"); code != 0 {
		t.Error(errOut)
		return false
	}
	sp := "../../testdata/spider"
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "data", "import", "spider", "--dev", sp+"/dev.json", "--gold", sp+"/dev_gold.sql",
		"--tables", sp+"/tables.json", "--db-root", sp+"/database", "--out", x.data); code != 0 {
		t.Error(errOut)
		return false
	}
	srv := synthTeacher(t, x.data)
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "synth", "--tasks", x.data, "--endpoint", srv.URL+"/v1", "--model", "teacher",
		"--samples-per-question", "2", "--num-examples", "300", "--out", x.synth); code != 0 {
		t.Errorf("synth: exit %d: %s", code, errOut)
		return false
	}
	return true
}

// exportRun runs an export command with --json and decodes its summary.
func exportRun(t *testing.T, args ...string) export.Summary {
	t.Helper()
	code, out, errOut := rlgate(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	var s export.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExportSFT exports a synthesis as ShareGPT and alpaca and reads the
// files back as plain JSON, holding every conversation to LLaMA-Factory's
// ShareGPT rule (system first, then human/observation at even and gpt at
// odd positions, ending on gpt) and to the trajectories it came from.
func TestExportSFT(t *testing.T) {
	t.Parallel()
	ldir, _, synthDir := exportSynthesised(t)
	trajs, _, _ := synthRead(t, synthDir)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, export.DatasetInfoFile), []byte(`{"other": {"file_name": "other.json"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sharegpt := filepath.Join(dir, "sql_sft.json")
	s := exportRun(t, "--ledger", ldir, "export", "sft", "--from", synthDir, "--format", "sharegpt", "--out", sharegpt)
	if s.Status != "ok" || s.Rows != len(trajs) || len(trajs) == 0 {
		t.Fatalf("summary %+v, %d trajectories", s, len(trajs))
	}
	raw, err := os.ReadFile(sharegpt)
	if err != nil {
		t.Fatal(err)
	}
	var records []struct {
		Conversations []map[string]string `json:"conversations"`
	}
	if err := json.Unmarshal(raw, &records); err != nil {
		t.Fatalf("sharegpt export is not a JSON array: %v", err)
	}
	if len(records) != len(trajs) {
		t.Fatalf("%d records, %d trajectories", len(records), len(trajs))
	}
	for i, r := range records {
		c, tr := r.Conversations, trajs[i]
		if len(c) < 3 || c[0]["from"] != "system" || c[0]["value"] != tr.System || c[1]["value"] != tr.BasePrompt || len(c)%2 != 1 {
			t.Fatalf("record %d: %v", i, c)
		}
		for j, m := range c[1:] {
			want := []string{"human", "observation"}
			if j%2 == 1 {
				want = []string{"gpt"}
			}
			if j == 0 {
				want = want[:1]
			}
			if !slices.Contains(want, m["from"]) || len(m) != 2 {
				t.Errorf("record %d message %d is from %q, want %v", i, j+1, m["from"], want)
			}
		}
		last := c[len(c)-1]["value"]
		if !strings.HasSuffix(last, "<solution>"+tr.FinalSQL()+"</solution>") {
			t.Errorf("record %d ends %q", i, last)
		}
		if len(tr.Turns) == 2 && !strings.HasPrefix(c[3]["value"], "<observation>") {
			t.Errorf("record %d: observation %q", i, c[3]["value"])
		}
	}
	var info map[string]map[string]any
	raw, err = os.ReadFile(filepath.Join(dir, export.DatasetInfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	wantEntry := map[string]any{"file_name": "sql_sft.json", "formatting": "sharegpt", "columns": map[string]any{"messages": "conversations"},
		"tags": map[string]any{"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt", "observation_tag": "observation", "system_tag": "system"}}
	if diff := cmp.Diff(wantEntry, info["sql_sft"]); diff != "" || info["other"] == nil {
		t.Errorf("dataset_info.json entry (-want +got):\n%s\nother entry kept: %v", diff, info["other"] != nil)
	}

	// Deterministic: the same export again writes the same bytes and finds
	// its run; the ledger holds both files' digests.
	again := exportRun(t, "--ledger", ldir, "export", "sft", "--from", filepath.Join(synthDir, synth.TrajectoriesFile), "--format", "sharegpt", "--out", sharegpt)
	if again.Status != "complete" || again.Run != s.Run || !cmp.Equal(again.Outputs, s.Outputs) {
		t.Errorf("export again: %+v, first %+v", again, s)
	}
	if code, out, _ := rlgate(t, "--ledger", ldir, "log", "--run", s.Run); code != 0 || !strings.Contains(out, "artifact") {
		t.Errorf("export run not in the log:\n%s", out)
	}

	alpaca := filepath.Join(dir, "sql_alpaca.json")
	exportRun(t, "--ledger", ldir, "export", "sft", "--from", synthDir, "--format", "alpaca", "--out", alpaca)
	var al []export.Alpaca
	raw, err = os.ReadFile(alpaca)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &al); err != nil {
		t.Fatal(err)
	}
	for i, a := range al {
		tr := trajs[i]
		if a.System != tr.System || !strings.HasSuffix(a.Output, "<solution>"+tr.FinalSQL()+"</solution>") || len(a.History) != len(tr.Turns)-1 {
			t.Errorf("alpaca record %d: %+v", i, a)
		}
		if len(a.History) == 0 && a.Instruction != tr.BasePrompt || len(a.History) > 0 && a.History[0][0] != tr.BasePrompt {
			t.Errorf("alpaca record %d does not start from the base prompt", i)
		}
	}
	if code, _, _ := rlgate(t, "--ledger", ldir, "export", "sft", "--from", synthDir, "--format", "openai", "--out", alpaca); code != exitUsage {
		t.Errorf("unknown format: exit %d", code)
	}

	// A trajectory that cannot make a conversation (no turns) is refused,
	// named, before anything is written or recorded.
	broken := filepath.Join(dir, "broken.jsonl")
	bad := trajs[1]
	bad.Turns = []synth.Turn{}
	f, err := os.Create(broken)
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonl.Write(f, []synth.Trajectory{trajs[0], bad}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, before, _ := rlgate(t, "--ledger", ldir, "head")
	code, _, errOut := rlgate(t, "--ledger", ldir, "export", "sft", "--from", broken, "--format", "sharegpt", "--out", filepath.Join(dir, "broken.json"))
	_, after, _ := rlgate(t, "--ledger", ldir, "head")
	if _, err := os.Stat(filepath.Join(dir, "broken.json")); code != exitError || !strings.Contains(errOut, "trajectory 2 ("+bad.ExampleID) || err == nil || before != after {
		t.Errorf("broken trajectory: exit %d, %q; file written %v; ledger head moved %v", code, errOut, err == nil, before != after)
	}
}

// TestExportRL exports the Spider tasks less a synthesis's questions in
// every RL format and reads each back: parquet with parquet-go (generic
// rows, the file's own schema) and through rlgate's SkyRL importer, JSON
// lines as JSON; no file holds an excluded id, every other task is there
// with its gold, and the run records the exclusion.
func TestExportRL(t *testing.T) {
	t.Parallel()
	ldir, data, synthDir := exportSynthesised(t)
	_, _, sftIDs := synthRead(t, synthDir)
	all, err := tasks.Read(filepath.Join(data, dataset.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	golds, err := gold.Read(filepath.Join(data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	goldSQL := map[string]string{}
	for _, g := range golds {
		goldSQL[g.ID] = g.SQL
	}
	var want []string // gold SQL of the tasks RL keeps, in file order
	for _, tk := range all {
		if !slices.Contains(sftIDs, tk.ID) {
			want = append(want, goldSQL[tk.ID])
		}
	}
	exclude := filepath.Join(synthDir, synth.ExampleIDsFile)
	dir := t.TempDir()

	sky := filepath.Join(dir, "rl.parquet")
	s := exportRun(t, "--ledger", ldir, "export", "rl", "--tasks", data, "--exclude", exclude, "--format", "skyrl-parquet", "--out", sky)
	if s.Rows != len(want) || s.Exclusion == nil || s.Exclusion.Excluded != len(sftIDs) || s.Exclusion.IDs != len(sftIDs) {
		t.Fatalf("summary %+v, exclusion %+v; want %d rows", s, s.Exclusion, len(want))
	}
	rows := exportReadParquet(t, sky)
	var got []string
	for i, r := range rows {
		var cols []string
		for k := range r {
			cols = append(cols, k)
		}
		slices.Sort(cols)
		if diff := cmp.Diff([]string{"data", "data_source", "db_id", "env_class", "prompt", "reward_spec"}, cols); diff != "" {
			t.Fatalf("row %d columns (-want +got):\n%s", i, diff)
		}
		spec := r["reward_spec"].(map[string]any)
		prompt := r["prompt"].([]any)
		first := prompt[0].(map[string]any)
		if first["element"] != nil {
			first = first["element"].(map[string]any)
		}
		if r["env_class"] != "text2sql" || r["data"] != "spider" || spec["method"] != "rule" || len(prompt) != 2 || first["role"] != "system" {
			t.Errorf("row %d: %v", i, r)
		}
		got = append(got, spec["ground_truth"].(string))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skyrl-parquet ground truth (-want +got):\n%s", diff)
	}
	// rlgate's own SkyRL importer reads it as a SkyRL file.
	back := filepath.Join(dir, "back")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "import", "skyrl", "--parquet", sky, "--db-root", "../../testdata/spider/database", "--out", back); code != 0 {
		t.Fatalf("import the export: exit %d: %s", code, errOut)
	}
	backGold, err := gold.Read(filepath.Join(back, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(backGold) != len(want) || backGold[0].SQL != want[0] {
		t.Errorf("imported back %d gold, want %d", len(backGold), len(want))
	}

	verl := filepath.Join(dir, "verl", "train.parquet") // a directory export creates
	exportRun(t, "--ledger", ldir, "export", "rl", "--tasks", data, "--exclude", exclude, "--format", "verl-parquet", "--out", verl)
	got = got[:0]
	for _, r := range exportReadParquet(t, verl) {
		extra := r["extra_info"].(map[string]any)
		if r["ability"] != "text2sql" || slices.Contains(sftIDs, extra["example_id"].(string)) {
			t.Errorf("verl row %v", r)
		}
		got = append(got, r["reward_model"].(map[string]any)["ground_truth"].(string))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verl-parquet ground truth (-want +got):\n%s", diff)
	}

	js := filepath.Join(dir, "rl.jsonl") // --exclude naming the synthesis directory
	if s := exportRun(t, "--ledger", ldir, "export", "rl", "--tasks", data, "--exclude", synthDir, "--format", "jsonl", "--out", js); s.Exclusion.Path != exclude {
		t.Errorf("exclusion recorded as %s, want %s", s.Exclusion.Path, exclude)
	}
	lines, err := jsonl.Read[export.SkyRLRow](js, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, l := range lines {
		got = append(got, l.RewardSpec.GroundTruth)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jsonl ground truth (-want +got):\n%s", diff)
	}
	code, out, errOut := rlgate(t, "--ledger", ldir, "show", fmt.Sprint(s.StartSeq))
	if code != 0 || !strings.Contains(out, `"exclusion"`) || !strings.Contains(out, s.Exclusion.Digest.String()) || !strings.Contains(out, `"excluded": 300`) {
		t.Errorf("the export run's start does not record its exclusion: exit %d:\n%s%s", code, out, errOut)
	}
}

// exportReadParquet reads every row of a parquet file as a generic map,
// with the file's own schema.
func exportReadParquet(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewGenericReader[map[string]any](pf, pf.Schema())
	defer r.Close()
	rows := make([]map[string]any, pf.NumRows())
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for n := 0; n < len(rows); {
		k, err := r.Read(rows[n:])
		n += k
		if err != nil && (!errors.Is(err, io.EOF) || n < len(rows)) {
			t.Fatal(err)
		}
	}
	return rows
}
