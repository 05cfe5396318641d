package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/tasks"
	"github.com/rlgate/rlgate/workflow/data"
)

const variantsData = "../../testdata/spider-variants"

// variantsMergedRoot builds what Spider-DK's README asks for, Spider's
// database folder merged with Spider-DK's, as links in a temporary
// directory.
func variantsMergedRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, src := range []string{importInputsSpider + "/database", variantsData + "/spider-dk/database"} {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			abs, err := filepath.Abs(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(abs, filepath.Join(root, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// variantsFirst is what a test expects of an import: counts from the
// dataset's SOURCES.md (wta_1 is the one Spider dev database not shipped),
// and the first task and gold as the published file has them.
type variantsFirst struct {
	Tasks, Skipped int
	DBID, Question string
	SQL            string
}

// TestImportSpiderVariantsThroughCLI imports each Spider variant from its
// published file through the CLI, checks what was imported against the
// file, and grades gold against itself on the databases to show that the
// databases line up with the questions.
func TestImportSpiderVariantsThroughCLI(t *testing.T) {
	tests := []struct {
		variant string
		dev     string
		dbRoot  func(*testing.T) string
		want    variantsFirst
		// failing lists the gold that must not score 1 against itself:
		// Spider-DK publishes one query with a missing comma.
		failing []string
		// sample is how many golds are graded against themselves; 0 means
		// all on the variant's own databases (Spider-DK's new_*).
		sample int
	}{
		{"spider-dk", "spider-dk/Spider-DK.json", variantsMergedRoot,
			variantsFirst{473, 62, "new_concert_singer", "How many singers do we have?", "SELECT count(*) FROM singer"},
			[]string{"spider-dk-0076"}, 0},
		{"spider-realistic", "spider-realistic/spider-realistic.json", func(*testing.T) string { return importInputsSpider + "/database" },
			variantsFirst{476, 32, "concert_singer", "Show name, country, age for all singers from the oldest to the youngest.", "SELECT name ,  country ,  age FROM singer ORDER BY age DESC"},
			nil, 40},
		{"spider-syn", "spider-syn/dev.json", func(*testing.T) string { return importInputsSpider + "/database" },
			variantsFirst{972, 62, "concert_singer", "How many vocalists do we have?", "SELECT count(*) FROM singer"},
			nil, 40},
	}
	for _, tt := range tests {
		t.Run(tt.variant, func(t *testing.T) {
			dir := t.TempDir()
			importInputsLedger(t, dir)
			out := filepath.Join(dir, "out")
			root := tt.dbRoot(t)
			code, stdout, stderr := rlgate(t, "data", "import", tt.variant, "--json", "--dev", filepath.Join(variantsData, tt.dev), "--db-root", root, "--out", out)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var s data.Imported
			if err := json.Unmarshal([]byte(stdout), &s); err != nil {
				t.Fatal(err)
			}
			ts, err := tasks.Read(filepath.Join(out, dataset.TasksFile))
			if err != nil {
				t.Fatal(err)
			}
			golds, err := gold.Read(filepath.Join(out, dataset.GoldFile))
			if err != nil {
				t.Fatal(err)
			}
			got := variantsFirst{len(ts), len(s.Skipped), ts[0].DBID, ts[0].Question, golds[0].SQL}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("import (-want +got):\n%s", diff)
			}
			if s.Kind != tt.variant || s.Dataset != tt.variant || ts[0].ID != tt.variant+"-0000" {
				t.Errorf("kind %q, dataset %q, first id %q", s.Kind, s.Dataset, ts[0].ID)
			}
			for _, sk := range s.Skipped {
				if sk.DBID != "wta_1" {
					t.Errorf("skipped %+v: only wta_1 is missing", sk)
				}
			}
			raw, err := os.ReadFile(filepath.Join(out, dataset.TasksFile))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), `"sql"`) || strings.Contains(string(raw), golds[1].SQL) {
				t.Error("tasks.jsonl carries gold SQL")
			}

			sample, n := golds, tt.sample
			if n == 0 {
				sample = nil
				for _, g := range golds {
					if strings.HasPrefix(g.DBID, "new_") {
						sample = append(sample, g)
					}
				}
				n = len(sample)
			}
			g := grade.NewGrader(grade.Options{}, nil)
			res, err := grade.SelfGrade(context.Background(), g, grade.MetricSpider, root, sample, n, grade.DefaultSelfGradeSeed)
			if err != nil {
				t.Fatal(err)
			}
			if res.Sample != n || res.Passed != n-len(tt.failing) || !cmp.Equal(res.Failed, append([]string{}, tt.failing...)) {
				t.Errorf("gold against itself: %d of %d scored 1, failed %v; want all but %v", res.Passed, res.Sample, res.Failed, tt.failing)
			}
		})
	}
}

// TestImportSpiderVariantBadInput: a record without its query is an error
// naming the file and item, and nothing is written.
func TestImportSpiderVariantBadInput(t *testing.T) {
	dir := t.TempDir()
	importInputsLedger(t, dir)
	dev := importInputsEdit(t, dir, variantsData+"/spider-syn/dev.json", importInputsReplace(`"query": "SELECT count(*) FROM singer"`, `"query": ""`))
	out := filepath.Join(dir, "out")
	code, _, stderr := rlgate(t, "data", "import", "spider-syn", "--dev", dev, "--db-root", importInputsSpider+"/database", "--out", out)
	if code != exitError || !strings.Contains(stderr, dev+" item 0 has no db_id, SpiderSynQuestion or query") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out was created: %v", err)
	}
}
