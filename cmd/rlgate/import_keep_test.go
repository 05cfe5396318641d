package main

import (
	"context"
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
)

// TestDataImportKeepsItsFiles: rlgate data import's dataset entry names,
// besides its manifest blob (the bytes of the manifest.json it wrote), the
// tasks, gold and Spider schemas files it wrote as blobs, so the audits can read them back
// by digest after the directory moved (docs/GATE.md, "Where the files are
// found").
func TestDataImportKeepsItsFiles(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	var want []ledger.Digest
	for _, f := range []string{dataset.ManifestFile, dataset.TasksFile, dataset.GoldFile, dataset.SpiderSchemasFile} {
		d, _, err := manifests.HashFile(context.Background(), filepath.Join(data, f))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	for _, e := range gateLog(t, ldir, "", records.KindArtifact) {
		var a ledger.Artifact
		if err := json.Unmarshal(e.Body, &a); err != nil {
			t.Fatal(err)
		}
		if a.Role == "dataset" {
			if d := cmp.Diff(want, e.Blobs, cmpopts.SortSlices(func(a, b ledger.Digest) bool { return a.String() < b.String() })); d != "" {
				t.Errorf("dataset entry %d blobs (-manifest.json, tasks.jsonl, gold.jsonl, spider_schemas.json +got):\n%s", e.Seq, d)
			}
			return
		}
	}
	t.Fatal("no dataset entry")
}
