package grade

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
)

// TestExactMatchOnRecordedSchemas: exact match grades a Spider import on
// the schemas its spider_schemas.json records, names that file's digest
// in the run's start, refuses the file once edited, and grades an import
// without one (made before rlgate recorded them) on schemas read from the
// databases, to the same verdict on each of the 972 DAIL-SQL items.
func TestExactMatchOnRecordedSchemas(t *testing.T) {
	ctx := context.Background()
	dir := importSpider(t)
	l, err := ledger.Init(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	grade := func(run string) (*FileSummary, error) {
		g := NewGrader(Options{}, nil)
		defer g.Close()
		return GradeFile(ctx, l, g, FileOptions{Run: run, Predictions: spiderDir + "/predictions/dail-sql-gpt4.txt",
			Format: FormatSpiderTxt, Dataset: dir, Metric: MetricSpiderEM})
	}
	man, err := dataset.ReadManifest(dir)
	if err != nil || man.SpiderSchemas == nil || man.SpiderSchemas.Count != 19 {
		t.Fatalf("the import recorded no schemas of its 19 databases: %v, %+v", err, man)
	}
	recorded, err := grade("recorded")
	if err != nil || recorded.Correct != 681 || recorded.Total != 972 {
		t.Fatalf("graded on recorded schemas: %v, %+v", err, recorded)
	}
	checkStoredOutcomes(t, l, recorded)
	var start gradeStart
	if err := l.DecodeBody(ctx, recorded.StartSeq, &start); err != nil || start.SpiderSchemas == nil || *start.SpiderSchemas != man.SpiderSchemas.Digest {
		t.Errorf("run.start names schemas %v, want %s (%v)", start.SpiderSchemas, man.SpiderSchemas.Digest, err)
	}

	// An import without the file: every schema is read from its database.
	older := *man
	older.SpiderSchemas = nil
	writeManifest(t, dir, &older)
	read, err := grade("read")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(recorded.Items, read.Items); d != "" {
		t.Errorf("schemas read from the databases grade otherwise (-recorded +read):\n%s", d)
	}
	var readStart gradeStart
	if err := l.DecodeBody(ctx, read.StartSeq, &readStart); err != nil || readStart.SpiderSchemas != nil {
		t.Errorf("a grading without recorded schemas names %v (%v)", readStart.SpiderSchemas, err)
	}

	// The file is what exact match reads: a database recorded without
	// tables fails the grading, though the database has them.
	writeManifest(t, dir, man)
	schemas, err := dataset.ReadSpiderSchemas(dir, man)
	if err != nil {
		t.Fatal(err)
	}
	schemas["concert_singer"] = dataset.SpiderSchema{}
	edited, err := ledger.CanonicalJSON(schemas)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dataset.SpiderSchemasFile), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := grade("edited"); !errors.Is(err, dataset.ErrSpiderSchemasChanged) {
		t.Errorf("an edited file, the manifest unchanged: %v, want ErrSpiderSchemasChanged", err)
	}
	forged := *man
	forged.SpiderSchemas = &dataset.FileRef{Path: dataset.SpiderSchemasFile, Digest: ledger.Sum(edited), Count: 19}
	writeManifest(t, dir, &forged)
	if _, err := grade("forged"); err == nil || !strings.Contains(err.Error(), "concert_singer.sqlite has no tables") {
		t.Errorf("graded on an empty recorded schema: %v, want the grading to fail on it", err)
	}
}

// writeManifest writes man as dir's manifest.json, as an import does.
func writeManifest(t *testing.T, dir string, man *dataset.Manifest) {
	t.Helper()
	body, err := ledger.CanonicalJSON(man)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dataset.ManifestFile), body, 0o600); err != nil {
		t.Fatal(err)
	}
}
