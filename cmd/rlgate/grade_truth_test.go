package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	DatabaseCheck struct {
		Mismatches []json.RawMessage `json:"database_mismatches"`
	} `json:"database_check"`
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

// TestDatabaseCheckFlags: rollout, eval and grade on a copy whose
// superhero.sqlite is corrupted exit 1 naming the file and the digest the
// import recorded, after a progress line saying they check, with no run
// started; --allow-db-mismatch reaches the
// check of grade and eval, which then grade and record the mismatch. What
// the check finds and records is workflow/evaluate's
// TestGradeRefusesChangedDatabase and TestEvalChecksDatabases.
func TestDatabaseCheckFlags(t *testing.T) {
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
	gradeArgs := []string{"grade", "--predictions", gradeTruthBird + "/predictions/gpt-4.json", "--format", "bird-json", "--tasks", out, "--metric", "bird", "--db-root", root}
	for _, args := range [][]string{
		append([]string{"rollout", "--run", "ro"}, base...),
		append([]string{"eval", "--run", "ev", "--metric", "bird"}, base...),
		gradeArgs,
	} {
		code, _, errOut := rlgate(t, args...)
		last := gradeTruthLastLine(errOut)
		if code != exitError || !strings.Contains(last, hero) || !strings.Contains(last, man.Databases["superhero"].String()) || !strings.Contains(errOut, "checking 3 databases") {
			t.Errorf("%s on a corrupted copy: exit %d, %q; want exit 1 naming %s after a progress line", args[0], code, errOut, hero)
		}
	}
	if code, stdout, _ := rlgate(t, "log", "--kind", "run.start", "--json"); code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a refused rollout, eval or grade started a run: %s", stdout)
	}
	if code, _, errOut := rlgate(t, append([]string{"eval", "--run", "ev", "--metric", "bird", "--allow-db-mismatch"}, base...)...); code != exitOK {
		t.Fatalf("eval --allow-db-mismatch: exit %d, %s", code, errOut)
	}
	code, stdout, errOut := rlgate(t, append(gradeArgs, "--allow-db-mismatch", "--run", "mismatch", "--json")...)
	var got []gradeTruthSummary
	if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil || len(got) != 1 || len(got[0].DatabaseCheck.Mismatches) != 1 {
		t.Fatalf("grade --allow-db-mismatch: exit %d, %v, %s%s", code, err, stdout, errOut)
	}
}
