package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// formatBirdIDsTaskSet is the task set of the 140 BIRD mini-dev tasks with
// a database, as the independent implementation of docs/FORMAT.md computed
// it from a real comparison entry (stages/tasks/testdata/task-set-vectors.json,
// rlgate-cli-comparison-entry-13).
const formatBirdIDsTaskSet = "50cdfb67d6e7768a605aa653f55bde97a74435b1bed755c9d7baf71683568607"

// An offline grading's run.start records the task set of the tasks it
// grades, as FORMAT.md ("Identifiers: Task set") promises for every
// grading, so it can be compared with a rollout's or a comparison's.
func TestFormatGradeStartRecordsTaskSet(t *testing.T) {
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	t.Setenv(ledger.EnvLedger, ldir)
	if code, _, errOut := rlgate(t, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	bird := "../../testdata/bird"
	out := filepath.Join(dir, "bird")
	if code, _, errOut := rlgate(t, "data", "import", "bird", "--dev", bird+"/mini_dev_sqlite.json", "--db-root", bird+"/dev_databases", "--out", out); code != exitOK {
		t.Fatalf("import: %s", errOut)
	}
	code, stdout, errOut := rlgate(t, "grade", "--predictions", bird+"/predictions/gpt-4.json", "--format", "bird-json",
		"--tasks", out, "--metric", "bird", "--run", "eval-gpt4", "--json")
	if code != exitOK {
		t.Fatalf("grade: %s", errOut)
	}
	var list []struct {
		StartSeq int64 `json:"start_seq"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("grade --json: %v\n%s", err, stdout)
	}
	l, err := ledger.OpenReadOnly(t.Context(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e, err := l.EntryBySeq(t.Context(), list[0].StartSeq)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Stage   string `json:"stage"`
		TaskSet string `json:"task_set"`
	}
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := struct{ Stage, TaskSet string }{"grade", "blake3:" + formatBirdIDsTaskSet}
	if diff := cmp.Diff(want, struct{ Stage, TaskSet string }{body.Stage, body.TaskSet}); diff != "" {
		t.Errorf("run.start %d (-want +got):\n%s", e.Seq, diff)
	}
}

// A dataset name is the prefix of every task id, and a task id holding a
// newline or NUL would make the task-set digest ambiguous (FORMAT.md
// "Identifiers: Task set"): import refuses such a name before writing, as
// a usage error naming --name (ledger.CheckName).
func TestFormatImportRefusesTaskIDsWithNewlineOrNUL(t *testing.T) {
	t.Setenv(ledger.EnvLedger, filepath.Join(t.TempDir(), "ledger"))
	if code, _, errOut := rlgate(t, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	bird := "../../testdata/bird"
	for _, name := range []string{"bird\nx", "bird\x00x"} {
		out := filepath.Join(t.TempDir(), "bird")
		code, _, errOut := rlgate(t, "data", "import", "bird", "--name", name, "--dev", bird+"/mini_dev_sqlite.json", "--db-root", bird+"/dev_databases", "--out", out)
		if code != exitUsage || !strings.Contains(errOut, "--name ") || !strings.Contains(errOut, "non-printable character") {
			t.Errorf("import --name %q: exit %d, stderr %q; want exit %d naming --name and the character", name, code, errOut, exitUsage)
		}
	}
}
