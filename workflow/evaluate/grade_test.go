package evaluate

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
	"github.com/rlgate/rlgate/stages/grade"
)

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeFile(t *testing.T, p string, raw []byte) {
	t.Helper()
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// corruptedCopy copies the BIRD databases to a new root under dir, as a
// user grading on a copy does, and flips a byte of the last page's cells
// of superhero.sqlite there.
func corruptedCopy(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "copy")
	for _, db := range []string{"student_club", "superhero", "toxicology"} {
		raw := readFile(t, dataset.DBPath(birdSource+"/dev_databases", db))
		if db == "superhero" {
			raw[len(raw)-100] ^= 0xff
		}
		os.MkdirAll(filepath.Join(root, db), 0o755)
		writeFile(t, dataset.DBPath(root, db), raw)
	}
	return root
}

// gpt4 grades BIRD's GPT-4 baseline predictions under the bird metric.
func gpt4(out, root, run string, allow bool, progress *lockedBuffer) grade.FileOptions {
	f := grade.FileOptions{Predictions: birdSource + "/predictions/gpt-4.json", Format: "bird-json", Dataset: out, DBRoot: root,
		Metric: grade.MetricBird, Run: run, AllowDBMismatch: allow}
	if progress != nil {
		f.Progress = progress
	}
	return f
}

// TestGradeRefusesChangedDatabase: grading on a copy whose
// superhero.sqlite is corrupted is refused, naming the file and both
// digests, and says in its progress that it checks; with AllowDBMismatch
// it grades, and the run records every database digest, the mismatch and
// the SQLite version.
func TestGradeRefusesChangedDatabase(t *testing.T) {
	dir := t.TempDir()
	ldir := newLedger(t)
	out, man := birdData(t, dir)
	root := corruptedCopy(t, dir)
	hero := dataset.DBPath(root, "superhero")
	corrupted := ledger.Sum(readFile(t, hero))

	var progress lockedBuffer
	_, err := Grade(context.Background(), ldir, grade.Options{}, []grade.FileOptions{gpt4(out, root, "", false, &progress)})
	if err == nil || isUsage(err) {
		t.Fatalf("corrupted copy: %v", err)
	}
	last := lastLine(err.Error())
	if !strings.Contains(last, hero) || !strings.Contains(last, corrupted.String()) ||
		!strings.Contains(last, man.Databases["superhero"].String()) || !strings.Contains(last, "--allow-db-mismatch") {
		t.Errorf("corrupted copy: %v; want an error naming %s, %s and %s", err, hero, corrupted, man.Databases["superhero"])
	}
	if !strings.Contains(progress.String(), "checking 3 databases") {
		t.Errorf("no progress line says the databases are being checked: %q", progress.String())
	}
	noRunStarted(t, ldir, "a refused grading")

	progress = lockedBuffer{}
	got, err := Grade(context.Background(), ldir, grade.Options{}, []grade.FileOptions{gpt4(out, root, "mismatch", true, &progress)})
	if err != nil || len(got) != 1 {
		t.Fatalf("AllowDBMismatch: %d summaries, %v", len(got), err)
	}
	mm := got[0].Databases.Mismatches
	if len(mm) != 1 || mm[0].DBID != "superhero" || mm[0].Path != hero || mm[0].Actual != corrupted || mm[0].Recorded != man.Databases["superhero"] {
		t.Errorf("recorded mismatches %+v", mm)
	}
	if !strings.Contains(progress.String(), "rlgate: grade mismatch: 140/140 tasks") {
		t.Errorf("no grading progress: %q", progress.String())
	}
	// The run records every database it graded on by digest, and the
	// SQLite version: modernc.org/sqlite v1.62.0 (go.mod) is SQLite
	// 3.54.1.
	want := map[string]ledger.Digest{}
	for db, d := range man.Databases {
		want[db] = d
	}
	want["superhero"] = corrupted
	var start struct {
		DatabaseCheck grade.DatabaseCheck `json:"database_check"`
	}
	if err := json.Unmarshal([]byte(entryBody(t, ldir, got[0].StartSeq)), &start); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where string
		check *grade.DatabaseCheck
	}{{"summary", got[0].Databases}, {"run.start", &start.DatabaseCheck}} {
		if diff := cmp.Diff(want, c.check.Digests); diff != "" {
			t.Errorf("%s: database digests (-want +got):\n%s", c.where, diff)
		}
		if c.check.SQLiteVersion != "3.54.1" {
			t.Errorf("%s: sqlite version %q, want 3.54.1", c.where, c.check.SQLiteVersion)
		}
	}
	if len(start.DatabaseCheck.Mismatches) != 1 {
		t.Errorf("run.start records %d mismatches, want 1", len(start.DatabaseCheck.Mismatches))
	}
	l := openLedger(t, ldir)
	defer l.Close()
	if rep, err := l.Verify(context.Background(), ledger.VerifyOptions{}); err != nil || !rep.OK() {
		t.Errorf("verify: %v %+v", err, rep)
	}
}

// TestGradeMissingDatabaseRoot: a database root without the databases is
// a one-line error naming the path; no run is left open for the next
// command to call killed or crashed.
func TestGradeMissingDatabaseRoot(t *testing.T) {
	dir := t.TempDir()
	ldir := newLedger(t)
	out, _ := birdData(t, dir)
	missing := filepath.Join(dir, "nonexistent")
	_, err := Grade(context.Background(), ldir, grade.Options{}, []grade.FileOptions{gpt4(out, missing, "", false, nil)})
	if err == nil || !strings.Contains(lastLine(err.Error()), dataset.DBPath(missing, "student_club")) || !strings.Contains(err.Error(), "Try: --db-root") {
		t.Errorf("missing databases: %v", err)
	}
	noRunStarted(t, ldir, "a refused grading")
}
