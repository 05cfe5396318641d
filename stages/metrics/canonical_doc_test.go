package metrics

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPipelineDocMetricTable: docs/PIPELINE.md's metric-name table states
// canonTables exactly, trainer by trainer, every key in its order, so the
// names a lab reads there are the names the audits look up.
func TestPipelineDocMetricTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/PIPELINE.md")
	if err != nil {
		t.Fatal(err)
	}
	columns := map[string]Trainer{"veRL": TrainerVerl, "SkyRL": TrainerSkyRL, "TRL": TrainerTRL, "LLaMA-Factory": TrainerLlamaFactory,
		"OpenRLHF": TrainerOpenRLHF, "HF Trainer via W&B / SwanLab": TrainerTransformers}
	_, table, ok := strings.Cut(string(raw), "\n| quantity | read by |")
	if !ok {
		t.Fatal("docs/PIPELINE.md has no metric table headed | quantity | read by |")
	}
	lines := strings.Split(strings.TrimSpace("| quantity | read by |"+table), "\n")
	cells := func(line string) []string {
		cs := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cs {
			cs[i] = strings.TrimSpace(cs[i])
		}
		return cs
	}
	header := cells(lines[0])
	got := map[Trainer]map[Canon][]string{}
	for _, line := range lines[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		row := cells(line)
		if len(row) != len(header) {
			t.Fatalf("row %q has %d cells, the header %d", line, len(row), len(header))
		}
		canon := Canon(strings.Trim(row[0], "`"))
		for i, col := range header[2:] {
			tr, ok := columns[col]
			if !ok {
				t.Fatalf("column %q is no trainer of canonical.go", col)
			}
			if row[i+2] == "–" {
				continue
			}
			if got[tr] == nil {
				got[tr] = map[Canon][]string{}
			}
			for _, k := range strings.Split(row[i+2], ", ") {
				got[tr][canon] = append(got[tr][canon], strings.Trim(k, "`"))
			}
		}
	}
	want := map[Trainer]map[Canon][]string{}
	for tr, rows := range canonTables {
		want[tr] = map[Canon][]string{}
		for _, r := range rows {
			want[tr][r.canon] = r.keys
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/PIPELINE.md's metric table differs from canonTables (-code +doc):\n%s", diff)
	}
}
