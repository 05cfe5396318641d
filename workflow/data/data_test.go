package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/jsonl"
)

const birdSource = "../../testdata/bird"

// TestImportAndRender: BIRD mini-dev imported is recorded as a dataset
// artifact; a second import into the same directory is refused unless
// forced; its prompts rendered give one line per task, recorded as a file
// artifact with the tasks' digest.
func TestImportAndRender(t *testing.T) {
	l := ledgertest.New(t)
	out := filepath.Join(t.TempDir(), "bird")
	o := ImportOptions{Kind: "bird", Out: out, Dev: birdSource + "/mini_dev_sqlite.json", DBRoot: birdSource + "/dev_databases"}
	im, err := Import(t.Context(), l.Dir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if im.Seq == 0 || im.Tasks.Count == 0 || im.Out != out {
		t.Fatalf("import: %+v", im)
	}
	a := artifactOf(t, l, im.Seq)
	if a.Role != records.RoleDataset || a.Digest.IsZero() {
		t.Errorf("entry %d: %+v, want the dataset", im.Seq, a)
	}
	before, _ := os.ReadFile(filepath.Join(out, dataset.ManifestFile))
	if _, err := Import(t.Context(), l.Dir(), o); err == nil || !strings.Contains(err.Error(), "output directory is not empty") {
		t.Errorf("import over an import: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, dataset.ManifestFile)); !bytes.Equal(before, after) {
		t.Error("the refused import changed manifest.json")
	}
	o.Force = true
	if _, err := Import(t.Context(), l.Dir(), o); err != nil {
		t.Fatalf("forced: %v", err)
	}

	prompts := filepath.Join(t.TempDir(), "prompts.jsonl")
	r, err := Render(t.Context(), l.Dir(), RenderOptions{Tasks: out, Out: prompts})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := jsonl.Read[Prompt](prompts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tasks != im.Tasks.Count || len(lines) != r.Tasks || r.TasksDigest != im.Tasks.Digest || r.Seq == 0 || len(lines[0].Messages) != 2 {
		t.Errorf("render: %+v, %d lines; want %d tasks of digest %s", r, len(lines), im.Tasks.Count, im.Tasks.Digest)
	}
	if a := artifactOf(t, l, r.Seq); a.Digest != r.Digest {
		t.Errorf("entry %d: %+v, want the rendered file %s", r.Seq, a, r.Digest)
	}
	if _, err := Render(t.Context(), l.Dir(), RenderOptions{Tasks: filepath.Join(t.TempDir(), "none"), Out: prompts}); !errors.Is(err, dataset.ErrTaskSource) {
		t.Errorf("render of no tasks: %v, want %v", err, dataset.ErrTaskSource)
	}
}

// artifactOf reads the artifact entry seq.
func artifactOf(t *testing.T, l *ledger.Ledger, seq int64) ledger.Artifact {
	t.Helper()
	a, err := ledger.DecodeEntry[ledger.Artifact](t.Context(), l, seq)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
