package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stages/synth"
)

// exportTrainOn records a stage run that reads data (rlgate run --in
// data=FILE), as a trainer's would, and returns its run id.
func exportTrainOn(t *testing.T, ldir, stage, run, data string) string {
	t.Helper()
	if code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", stage, "--run", run, "--gpu", "off", "--in", "data="+data, "--", "true"); code != 0 {
		t.Fatalf("run %s: exit %d: %s", run, code, errOut)
	}
	return run
}

// exportSplitAudit runs the split audit on the sft and rl runs and
// returns its exit code and its sft-rl-disjoint finding.
func exportSplitAudit(t *testing.T, ldir, sft, rl string) (int, audit.Finding) {
	t.Helper()
	code, out, errOut := rlgate(t, "--ledger", ldir, "audit", "split", "--train", "sft="+sft+",rl="+rl, "--json")
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("audit split: exit %d: %v: %s%s", code, err, out, errOut)
	}
	for _, f := range r.Findings {
		if f.Check == audit.CheckSFTvsRL {
			return code, f
		}
	}
	t.Fatalf("audit split: no %s finding: %s", audit.CheckSFTvsRL, out)
	return 0, audit.Finding{}
}

// TestExportSplitAuditReadsRecordedExclusion: training runs that read an
// SFT export and an RL export (and nothing else) are audited through the
// exports' records. RL data made with --exclude example_ids.json passes
// sft-rl-disjoint, naming the exclusion; RL data made without it fails,
// with every shared id. Before the split audit read the exports' records,
// neither run named an imported dataset and the check never ran.
func TestExportSplitAuditReadsRecordedExclusion(t *testing.T) {
	t.Parallel()
	ldir, data, synthDir := exportSynthesised(t)
	dir := t.TempDir()
	sftData := filepath.Join(dir, "sft.json")
	exportRun(t, "--ledger", ldir, "export", "sft", "--from", synthDir, "--format", "sharegpt", "--out", sftData)
	rlData := filepath.Join(dir, "rl.parquet")
	exportRun(t, "--ledger", ldir, "export", "rl", "--tasks", data, "--exclude", filepath.Join(synthDir, synth.ExampleIDsFile),
		"--format", "skyrl-parquet", "--out", rlData)
	leaky := filepath.Join(dir, "rl-all.parquet")
	exportRun(t, "--ledger", ldir, "export", "rl", "--tasks", data, "--format", "skyrl-parquet", "--out", leaky)

	// The SFT run also reads a prompts file data render recorded outside
	// any run: an input whose producer is no synthesis or export.
	prompts := filepath.Join(dir, "prompts.jsonl")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "data", "render", "--tasks", data, "--out", prompts); code != 0 {
		t.Fatalf("data render: exit %d: %s", code, errOut)
	}
	// And a file a user's own stage named synth wrote: its run records
	// no task ids, so it is no rlgate synth, whatever its stage's name.
	notes := filepath.Join(dir, "notes.txt")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", synth.Stage, "--run", "my-synth", "--gpu", "off", "--out", "notes="+notes,
		"--", "sh", "-c", "echo hand-written > "+notes); code != 0 {
		t.Fatalf("run my-synth: exit %d: %s", code, errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", "sft", "--run", "sft1", "--gpu", "off", "--in", "data="+sftData,
		"--in", "prompts="+prompts, "--in", "notes="+notes, "--", "true"); code != 0 {
		t.Fatalf("run sft1: exit %d: %s", code, errOut)
	}
	sft := "sft1"
	code, f := exportSplitAudit(t, ldir, sft, exportTrainOn(t, ldir, "rl", "rl1", rlData))
	if code != 0 || !f.OK || !strings.Contains(f.Message, "left out the 300 ids of "+filepath.Join(synthDir, synth.ExampleIDsFile)) {
		t.Errorf("excluded RL data: exit %d, %+v", code, f)
	}

	trajs, _, _ := synthRead(t, synthDir)
	used := map[string]bool{}
	for _, tr := range trajs {
		used[tr.ExampleID] = true
	}
	code, f = exportSplitAudit(t, ldir, sft, exportTrainOn(t, ldir, "rl", "rl2", leaky))
	raw, _ := json.Marshal(f.Evidence)
	var shared []audit.SplitOverlap
	if err := json.Unmarshal(raw, &shared); err != nil {
		t.Fatal(err)
	}
	if code != exitCheckFailed || f.OK || len(shared) != len(used) {
		t.Errorf("RL data with the SFT questions: exit %d, %d shared ids, want %d: %s", code, len(shared), len(used), f.Message)
	}
	for _, o := range shared {
		if !used[o.Train] {
			t.Errorf("shared id %s is not an SFT question", o.Train)
		}
	}
	if code, out, _ := rlgate(t, "--ledger", ldir, "verify"); code != 0 {
		t.Errorf("verify after synth, exports and audits: exit %d:\n%s", code, out)
	}
}
