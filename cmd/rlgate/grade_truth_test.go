package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

const gradeTruthBird = "../../testdata/bird"

// gradeTruthImport imports BIRD mini-dev into a fresh ledger under dir and
// returns the dataset directory and its manifest.
func gradeTruthImport(t *testing.T, dir string) (string, *dataset.Manifest) {
	t.Helper()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	if code, _, errOut := rlgate(t, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	out := filepath.Join(dir, "bird")
	if code, _, errOut := rlgate(t, "data", "import", "bird", "--dev", gradeTruthBird+"/mini_dev_sqlite.json", "--db-root", gradeTruthBird+"/dev_databases", "--out", out); code != exitOK {
		t.Fatal(errOut)
	}
	m, err := dataset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

// gradeTruthCopyDBs copies the BIRD databases to a new root, as a user
// grading on a copy does.
func gradeTruthCopyDBs(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "copy")
	for _, db := range []string{"student_club", "superhero", "toxicology"} {
		raw, err := os.ReadFile(dataset.DBPath(gradeTruthBird+"/dev_databases", db))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, db), 0o755)
		if err := os.WriteFile(dataset.DBPath(root, db), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// gradeTruthSummary is the part of grade --json these tests read.
type gradeTruthSummary struct {
	Run           string `json:"run"`
	Correct       int    `json:"correct"`
	Total         int    `json:"total"`
	DatabaseCheck struct {
		Databases  map[string]ledger.Digest `json:"databases"`
		Mismatches []struct {
			DBID     string        `json:"db_id"`
			Path     string        `json:"path"`
			Recorded ledger.Digest `json:"recorded"`
			Actual   ledger.Digest `json:"actual"`
		} `json:"database_mismatches"`
		SQLiteVersion string `json:"sqlite_version"`
	} `json:"database_check"`
}

// gradeTruthRunStart returns the body of a run's run.start entry.
func gradeTruthRunStart(t *testing.T, run string) string {
	t.Helper()
	code, out, errOut := rlgate(t, "log", "--run", run, "--kind", "run.start", "--json")
	var entries []ledger.Entry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || code != exitOK || len(entries) != 1 {
		t.Fatalf("log run.start of %s: exit %d, %v, %s", run, code, err, errOut)
	}
	return string(entries[0].Body)
}

// TestGradeRefusesChangedDatabase: grading on a copy whose superhero.sqlite
// is corrupted is refused, naming the file and both digests, and says on
// stderr that it checks; with --allow-db-mismatch it grades, printing
// progress and a --json list (one file, still a list), and the run
// records every database digest, the mismatch and the SQLite version.
func TestGradeRefusesChangedDatabase(t *testing.T) {
	dir := t.TempDir()
	out, man := gradeTruthImport(t, dir)
	root := gradeTruthCopyDBs(t, dir)
	hero := dataset.DBPath(root, "superhero")
	raw, _ := os.ReadFile(hero)
	raw[len(raw)-100] ^= 0xff // a byte of the last page's cells
	os.WriteFile(hero, raw, 0o644)
	corrupted := ledger.Sum(raw)

	args := []string{"grade", "--predictions", gradeTruthBird + "/predictions/gpt-4.json", "--format", "bird-json", "--tasks", out, "--metric", "bird", "--db-root", root}
	code, _, errOut := rlgate(t, args...)
	last := gradeTruthLastLine(errOut)
	if code != exitError || !strings.Contains(last, hero) || !strings.Contains(last, corrupted.String()) ||
		!strings.Contains(last, man.Databases["superhero"].String()) || !strings.Contains(last, "--allow-db-mismatch") {
		t.Errorf("corrupted copy: exit %d, stderr %q; want exit 1 naming %s, %s and %s", code, errOut, hero, corrupted, man.Databases["superhero"])
	}
	if !strings.Contains(errOut, "checking 3 databases") {
		t.Errorf("no progress line says the databases are being checked: %q", errOut)
	}
	if code, stdout, _ := rlgate(t, "log", "--kind", "run.start", "--json"); code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a refused grading started a run: %s", stdout)
	}

	code, stdout, errOut := rlgate(t, append(args, "--allow-db-mismatch", "--run", "mismatch", "--json")...)
	var got []gradeTruthSummary
	if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil || len(got) != 1 {
		t.Fatalf("--allow-db-mismatch: exit %d, %v, %s", code, err, errOut)
	}
	mm := got[0].DatabaseCheck.Mismatches
	if len(mm) != 1 || mm[0].DBID != "superhero" || mm[0].Path != hero || mm[0].Actual != corrupted || mm[0].Recorded != man.Databases["superhero"] {
		t.Errorf("recorded mismatches %+v", mm)
	}
	if !strings.Contains(errOut, "rlgate: grade mismatch: 140/140 tasks") {
		t.Errorf("no grading progress on stderr: %q", errOut)
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
		DatabaseCheck struct {
			Databases     map[string]ledger.Digest `json:"databases"`
			Mismatches    []json.RawMessage        `json:"database_mismatches"`
			SQLiteVersion string                   `json:"sqlite_version"`
		} `json:"database_check"`
	}
	if err := json.Unmarshal([]byte(gradeTruthRunStart(t, "mismatch")), &start); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where     string
		databases map[string]ledger.Digest
		version   string
	}{{"--json", got[0].DatabaseCheck.Databases, got[0].DatabaseCheck.SQLiteVersion}, {"run.start", start.DatabaseCheck.Databases, start.DatabaseCheck.SQLiteVersion}} {
		if diff := cmp.Diff(want, c.databases); diff != "" {
			t.Errorf("%s: database digests (-want +got):\n%s", c.where, diff)
		}
		if c.version != "3.54.1" {
			t.Errorf("%s: sqlite version %q, want 3.54.1", c.where, c.version)
		}
	}
	if len(start.DatabaseCheck.Mismatches) != 1 {
		t.Errorf("run.start records %d mismatches, want 1", len(start.DatabaseCheck.Mismatches))
	}
	if code, out, _ := rlgate(t, "verify"); code != exitOK {
		t.Errorf("verify: %s", out)
	}
}

// TestGradeMissingDatabaseRoot: a --db-root without the databases is a
// one-line error naming the path; no run is left open for the next
// command to call killed or crashed.
func TestGradeMissingDatabaseRoot(t *testing.T) {
	dir := t.TempDir()
	out, _ := gradeTruthImport(t, dir)
	missing := filepath.Join(dir, "nonexistent")
	code, _, errOut := rlgate(t, "grade", "--predictions", gradeTruthBird+"/predictions/gpt-4.json", "--format", "bird-json", "--tasks", out, "--metric", "bird", "--db-root", missing)
	last := gradeTruthLastLine(errOut)
	if code != exitError || !strings.Contains(last, dataset.DBPath(missing, "student_club")) || !strings.Contains(last, "Try: --db-root") {
		t.Errorf("missing databases: exit %d, %q", code, errOut)
	}
	for _, kind := range []string{"run.start", "run.end"} {
		if code, stdout, _ := rlgate(t, "log", "--kind", kind, "--json"); code != exitOK || strings.TrimSpace(stdout) != "[]" {
			t.Errorf("after a refused grading, %s entries: %s", kind, stdout)
		}
	}
}

// TestGradeCompareStatsBadFlagValues: a bad flag value is a usage error
// (exit 2) naming the flag and what it takes.
func TestGradeCompareStatsBadFlagValues(t *testing.T) {
	t.Setenv(ledger.EnvLedger, filepath.Join(t.TempDir(), "ledger"))
	rlgate(t, "init")
	grade := []string{"grade", "--predictions", "p.json", "--tasks", "t", "--format", "bird-json", "--metric", "bird"}
	compare := []string{"compare", "--runs", "a=x,b=y"}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{append(grade, "--format", "foo"), []string{`--format "foo"`, "bird-json, spider-txt, jsonl"}},
		{append(grade, "--metric", "foo"), []string{`--metric "foo"`, "bird, spider, strict, bird-softf1 or spider-em"}},
		{append(compare, "--alpha", "2"), []string{"--alpha 2", "between 0 and 1"}},
		{append(compare, "--alpha", "0"), []string{"--alpha 0", "between 0 and 1"}},
		{append(compare, "--resamples", "0"), []string{"--resamples 0", "want 100 or more"}},
		{append(compare, "--baseline", "c"), []string{`--baseline "c"`, "one of the labels"}},
		{[]string{"stats", "mcnemar", "--b", "-1", "--c", "2"}, []string{"--b -1", "want 0 or more"}},
		{[]string{"stats", "mcnemar", "--b", "10", "--c", "2", "--n", "5"}, []string{"--n 5", "b+c = 12"}},
		{[]string{"stats", "mcnemar", "--b", "10", "--c", "2", "--alpha", "1.5"}, []string{"--alpha 1.5"}},
		{[]string{"stats", "wilson", "--k", "5", "--n", "3"}, []string{"--k 5", "want 0 to 3"}},
		{[]string{"stats", "passk", "--n", "10", "--c", "3", "--k", "11"}, []string{"--k 11", "want 1 to 10"}},
		{[]string{"stats", "holm", "0.2", "1.5"}, []string{`"1.5" is not a p-value`}},
		{[]string{"stats", "holm", "--alpha", "-1", "0.2"}, []string{"--alpha -1"}},
	} {
		code, _, errOut := rlgate(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d (%q), want %d", tt.args, code, errOut, exitUsage)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: %q lacks %q", tt.args, errOut, w)
			}
		}
	}
}

// TestImportPrintsSkippedReadably: the databases whose questions were
// skipped are listed by name with their counts, in order of first
// appearance in the source, never as a Go map.
func TestImportPrintsSkippedReadably(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	rlgate(t, "init")
	code, stdout, errOut := rlgate(t, "data", "import", "bird", "--dev", gradeTruthBird+"/mini_dev_sqlite.json", "--db-root", gradeTruthBird+"/dev_databases", "--out", filepath.Join(dir, "bird"))
	if code != exitOK {
		t.Fatal(errOut)
	}
	var dev []struct {
		DBID string `json:"db_id"`
	}
	json.Unmarshal(gradeTruthRead(t, gradeTruthBird+"/mini_dev_sqlite.json"), &dev)
	var order []string
	count := map[string]int{}
	for _, q := range dev {
		switch q.DBID {
		case "student_club", "superhero", "toxicology":
			continue
		}
		if count[q.DBID] == 0 {
			order = append(order, q.DBID)
		}
		count[q.DBID]++
	}
	var parts []string
	for _, db := range order {
		parts = append(parts, db+" ("+gradeTruthItoa(count[db])+")")
	}
	if want := strings.Join(parts, ", "); !strings.Contains(stdout, want) || strings.Contains(stdout, "map[") {
		t.Errorf("skipped databases: want %q in\n%s", want, stdout)
	}
}

func gradeTruthLastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func gradeTruthRead(t *testing.T, p string) []byte {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func gradeTruthItoa(n int) string { return strconv.Itoa(n) }

// TestRolloutAndEvalCheckDatabases: rollout and eval check the databases
// as grade does, before anything is played; eval --allow-db-mismatch plays
// and grades, and the grading run records the mismatch.
func TestRolloutAndEvalCheckDatabases(t *testing.T) {
	dir := t.TempDir()
	out, man := gradeTruthImport(t, dir)
	root := gradeTruthCopyDBs(t, dir)
	hero := dataset.DBPath(root, "superhero")
	raw := gradeTruthRead(t, hero)
	raw[len(raw)-100] ^= 0xff
	os.WriteFile(hero, raw, 0o644)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		return rollouttest.Reply{Content: "<think>t</think><solution>SELECT 1</solution>"}
	})
	base := []string{"--tasks", out, "--db-root", root, "--endpoint", srv.URL, "--model", "m", "--limit", "3"}
	for _, args := range [][]string{
		append([]string{"rollout", "--run", "ro"}, base...),
		append([]string{"eval", "--run", "ev", "--metric", "bird"}, base...),
	} {
		code, _, errOut := rlgate(t, args...)
		last := gradeTruthLastLine(errOut)
		if code != exitError || !strings.Contains(last, hero) || !strings.Contains(last, man.Databases["superhero"].String()) {
			t.Errorf("%s on a corrupted copy: exit %d, %q", args[0], code, errOut)
		}
	}
	if code, stdout, _ := rlgate(t, "log", "--kind", "run.start", "--json"); code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a refused rollout or eval started a run: %s", stdout)
	}
	code, _, errOut := rlgate(t, append([]string{"eval", "--run", "ev", "--metric", "bird", "--allow-db-mismatch"}, base...)...)
	if code != exitOK {
		t.Fatalf("eval --allow-db-mismatch: exit %d, %s", code, errOut)
	}
	if strings.Count(errOut, "checking 3 databases") != 1 {
		t.Errorf("eval hashed the databases more than once, or said nothing: %q", errOut)
	}
	var start struct {
		DatabaseCheck struct {
			Mismatches []struct {
				DBID string `json:"db_id"`
			} `json:"database_mismatches"`
			SQLiteVersion string `json:"sqlite_version"`
		} `json:"database_check"`
	}
	if err := json.Unmarshal([]byte(gradeTruthRunStart(t, "ev.bird-greedy")), &start); err != nil {
		t.Fatal(err)
	}
	if c := start.DatabaseCheck; len(c.Mismatches) != 1 || c.Mismatches[0].DBID != "superhero" || c.SQLiteVersion == "" {
		t.Errorf("grading run.start database check %+v", c)
	}
}

// TestEvalRefusesEditedGold: eval grades only against the gold file the
// import wrote; one cut short is refused before the grading run starts.
func TestEvalRefusesEditedGold(t *testing.T) {
	dir := t.TempDir()
	out, _ := gradeTruthImport(t, dir)
	goldPath := filepath.Join(out, dataset.GoldFile)
	raw := gradeTruthRead(t, goldPath)
	os.WriteFile(goldPath, raw[:strings.LastIndex(strings.TrimSpace(string(raw)), "\n")+1], 0o644)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		return rollouttest.Reply{Content: "<think>t</think><solution>SELECT 1</solution>"}
	})
	code, _, errOut := rlgate(t, "eval", "--run", "ev", "--metric", "bird", "--tasks", out, "--endpoint", srv.URL, "--model", "m", "--limit", "3")
	if last := gradeTruthLastLine(errOut); code != exitError || !strings.Contains(last, goldPath) || !strings.Contains(last, "139 entries") {
		t.Errorf("eval with a gold file a line short: exit %d, %q", code, errOut)
	}
	if code, stdout, _ := rlgate(t, "log", "--run", "ev.bird-greedy", "--json"); code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a grading run was recorded: %s", stdout)
	}
}
