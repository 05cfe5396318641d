package dataset

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/spidersql"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// officialHardness reads testdata/spider/dev_hardness.official.tsv: the
// official evaluator's hardness of each Spider dev gold query, by index.
func officialHardness(t *testing.T) map[int]string {
	t.Helper()
	f, err := os.Open(spider + "/dev_hardness.official.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]string{}
	s := bufio.NewScanner(f)
	s.Scan() // header
	for s.Scan() {
		cols := strings.Split(s.Text(), "\t")
		i, err := strconv.Atoi(cols[0])
		if err != nil || len(cols) != 3 {
			t.Fatalf("hardness line %q", s.Text())
		}
		out[i] = cols[2]
	}
	return out
}

// TestSpiderHardnessAtImport: importing Spider dev records each task's
// official hardness in the gold file, equal to the official evaluator's
// on all 972 items with a database (schemas read from the databases, as
// get_schema reads them); the policy's tasks.jsonl carries none.
func TestSpiderHardnessAtImport(t *testing.T) {
	im, err := ImportSpider(ctx, SpiderOptions{Dev: spider + "/dev.json", Gold: spider + "/dev_gold.sql", DBRoot: spider + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	official := officialHardness(t)
	got, want := map[int]string{}, map[int]string{}
	for _, g := range im.Gold {
		got[g.Index], want[g.Index] = g.Difficulty, official[g.Index]
	}
	if len(got) != 972 {
		t.Fatalf("%d gold entries, want 972", len(got))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hardness differs from the official (-official +import):\n%s", d)
	}
	raw, _ := json.Marshal(im.Tasks)
	for _, level := range spidersql.Levels {
		if strings.Contains(string(raw), `"`+level+`"`) {
			t.Errorf("the policy's tasks mention hardness %q", level)
		}
	}
}

// TestVariantHardnessAtImport: the Spider-format variants get hardness
// too. Where a variant's query is a Spider dev query (all 476 of
// Spider-Realistic's, all but 38 of Spider-Syn's 972, all but 66 of the
// 127 Spider-DK items on its own databases), its hardness is the official
// hardness of that dev item; every other query parses too, Spider-DK's
// one gold that SQLite rejects included.
func TestVariantHardnessAtImport(t *testing.T) {
	official := officialHardness(t)
	var dev []struct {
		Query string `json:"query"`
	}
	raw, err := os.ReadFile(spider + "/dev.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dev); err != nil {
		t.Fatal(err)
	}
	byQuery := map[string]string{}
	for i, d := range dev {
		byQuery[d.Query] = official[i]
	}
	variants := "../../testdata/spider-variants/"
	for _, tt := range []struct {
		variant   SpiderVariant
		dev       string
		dbRoot    string
		rewritten int // queries that are not Spider dev queries
	}{
		{SpiderSyn, "spider-syn/dev.json", spider + "/database", 38},
		{SpiderRealistic, "spider-realistic/spider-realistic.json", spider + "/database", 0},
		{SpiderDK, "spider-dk/Spider-DK.json", variants + "spider-dk/database", 66},
	} {
		t.Run(string(tt.variant), func(t *testing.T) {
			im, err := ImportSpiderVariant(ctx, VariantOptions{Variant: tt.variant, Dev: variants + tt.dev, DBRoot: tt.dbRoot})
			if err != nil {
				t.Fatal(err)
			}
			rewritten, counts := 0, map[string]int{}
			for _, g := range im.Gold {
				counts[g.Difficulty]++
				want, ok := byQuery[g.SQL]
				switch {
				case !ok:
					rewritten++
				case g.Difficulty != want:
					t.Errorf("%s: hardness %s, official %s: %s", g.ID, g.Difficulty, want, g.SQL)
				}
			}
			t.Logf("%d gold, hardness %v", len(im.Gold), counts)
			if rewritten != tt.rewritten || counts[UnparsedHardness] != 0 {
				t.Errorf("%d queries not from Spider dev (want %d), %d unparsed (want 0)", rewritten, tt.rewritten, counts[UnparsedHardness])
			}
		})
	}
}

// TestSpiderSchemasRecorded: a Spider import writes spider_schemas.json
// with the schema and foreign keys ParseSchemaKeys reads from each of its
// 19 databases, as the grader would read them, and names it in the
// manifest; an import without schemas forced over it removes the file.
func TestSpiderSchemasRecorded(t *testing.T) {
	im, err := ImportSpider(ctx, SpiderOptions{Dev: spider + "/dev.json", Gold: spider + "/dev_gold.sql", DBRoot: spider + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := im.WriteDir(dir, false); err != nil {
		t.Fatal(err)
	}
	man, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadSpiderSchemas(dir, man)
	if err != nil {
		t.Fatal(err)
	}
	ex := sqlenv.NewExecutor(sqlenv.Options{})
	defer ex.Close()
	want := map[string]SpiderSchema{}
	for id := range man.Databases {
		var sc SpiderSchema
		if sc.Schema, sc.Keys, err = ParseSchemaKeys(ctx, ex, DBPath(man.DBRoot, id)); err != nil {
			t.Fatal(err)
		}
		want[id] = sc
	}
	if len(want) != 19 {
		t.Fatalf("%d databases, want 19", len(want))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("recorded schemas differ from the databases' (-read +recorded):\n%s", d)
	}
	im.SpiderSchemas = nil
	im.Manifest.SpiderSchemas = nil
	if err := im.WriteDir(dir, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SpiderSchemasFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an import without schemas left the earlier one's file: %v", err)
	}
	if man, err := ReadManifest(dir); err != nil || man.SpiderSchemas != nil {
		t.Errorf("manifest names schemas %+v (%v)", man, err)
	}
}
