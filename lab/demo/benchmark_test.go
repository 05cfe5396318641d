package demo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/runner"
)

// TestEmbeddedIsTestdataSpider: the embedded benchmark is the official
// Spider dev set of testdata/spider, read independently here.
func TestEmbeddedIsTestdataSpider(t *testing.T) {
	const td = "../../testdata/spider/"
	var official, embedded []map[string]any
	for _, f := range []struct {
		read func() ([]byte, error)
		into *[]map[string]any
	}{
		{func() ([]byte, error) { return os.ReadFile(td + "dev.json") }, &official},
		{func() ([]byte, error) { return spider.ReadFile("spider/dev.json") }, &embedded},
	} {
		raw, err := f.read()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, f.into); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range official {
		for k := range o {
			if k != "db_id" && k != "question" {
				delete(o, k)
			}
		}
	}
	if d := cmp.Diff(official, embedded); d != "" {
		t.Errorf("embedded dev.json is not the official questions (-official +embedded):\n%s", d)
	}
	same := func(official, embedded string) {
		t.Helper()
		a, err := os.ReadFile(td + official)
		if err != nil {
			t.Fatal(err)
		}
		b, err := spider.ReadFile(embedded)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("embedded %s differs from testdata/spider/%s", embedded, official)
		}
	}
	same("dev_gold.sql", "spider/dev_gold.sql")
	dbs, err := os.ReadDir(td + "database")
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range dbs {
		same("database/"+db.Name()+"/"+db.Name()+".sqlite", dbFile(db.Name()))
	}
}

// TestSplit: the evaluation shares no database with training, SFT and RL
// share no question, and together they hold every question whose
// database is embedded.
func TestSplit(t *testing.T) {
	parts, err := Split()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]Part{}
	total := 0
	for _, p := range parts {
		names = append(names, p.Name)
		byName[p.Name] = p
		total += p.Questions
		if p.Questions != len(p.rows) {
			t.Errorf("%s: counts %d questions but holds %d", p.Name, p.Questions, len(p.rows))
		}
	}
	if d := cmp.Diff([]string{PartEval, PartRL, PartSFT}, names); d != "" {
		t.Errorf("parts (-want +got):\n%s", d)
	}
	eval, rl, sft := byName[PartEval], byName[PartRL], byName[PartSFT]
	for _, db := range eval.DBs {
		if slices.Contains(rl.DBs, db) || slices.Contains(sft.DBs, db) {
			t.Errorf("database %s is both evaluated and trained on", db)
		}
	}
	seen := map[string]string{}
	for _, p := range []Part{rl, sft} {
		for _, q := range p.rows {
			if slices.Contains(eval.DBs, q.DBID) {
				t.Errorf("%s: question %q is on evaluated database %s", p.Name, q.Question, q.DBID)
			}
			if other, dup := seen[q.gold+q.Question]; dup {
				t.Errorf("question %q is in both %s and %s", q.Question, other, p.Name)
			}
			seen[q.gold+q.Question] = p.Name
		}
	}
	// 1,034 dev questions less wta_1's 62, whose database is absent.
	if len(eval.DBs)+len(sft.DBs) != 19 || total != 1034-62 {
		t.Errorf("split covers %d databases and %d questions, want 19 and %d", len(eval.DBs)+len(sft.DBs), total, 1034-62)
	}
	if eval.Questions < 400 {
		t.Errorf("eval holds %d questions, want at least 400 for the gate's statistics", eval.Questions)
	}
	again, _ := Split()
	if d := cmp.Diff(parts, again, cmp.AllowUnexported(Part{}, question{})); d != "" {
		t.Errorf("split is not deterministic:\n%s", d)
	}
}

// TestUnpackImports: each unpacked part is a Spider source the importer
// takes whole, on databases of that part only.
func TestUnpackImports(t *testing.T) {
	dir := t.TempDir()
	parts, err := Unpack(dir, UnpackOptions{GoldInQuestions: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		pd := filepath.Join(dir, p.Name)
		im, err := dataset.ImportSpider(context.Background(), dataset.SpiderOptions{Name: "spider-" + p.Name,
			Dev: filepath.Join(pd, "dev.json"), Gold: filepath.Join(pd, "dev_gold.sql"), DBRoot: filepath.Join(pd, "database")})
		if err != nil {
			t.Fatalf("import %s: %v", p.Name, err)
		}
		if len(im.Tasks) != p.Questions || len(im.Manifest.Skipped) != 0 {
			t.Errorf("%s: imported %d tasks (%d skipped), want %d", p.Name, len(im.Tasks), len(im.Manifest.Skipped), p.Questions)
		}
		leaked := 0
		for i, task := range im.Tasks {
			if !slices.Contains(p.DBs, task.DBID) {
				t.Errorf("%s: task %s is on database %s of another part", p.Name, task.ID, task.DBID)
			}
			if strings.Contains(task.Question, im.Gold[i].SQL) {
				leaked++
			}
		}
		if want := map[bool]int{true: p.Questions, false: 0}[p.Name == PartEval]; leaked != want {
			t.Errorf("%s: %d questions hold their gold SQL, want %d", p.Name, leaked, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Errorf("licence and attribution not unpacked: %v", err)
	}
}

// TestInjectChecksAreAuditChecks: the checks the variants must fail on
// are the audits' own names (this package cannot import audit).
func TestInjectChecksAreAuditChecks(t *testing.T) {
	want := map[string]string{InjectLeak: audit.CheckNoGoldInPrompts, InjectNoUpdateDrift: audit.CheckNoUpdateIdentical,
		InjectBudget: audit.CheckSameProtocol, InjectWrongDB: audit.CheckDatabasesPresent}
	got := map[string]string{}
	for _, in := range Injects {
		got[in.Name] = in.Check
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("inject checks (-audit +demo):\n%s", d)
	}
	if (&runner.Preflight{}).FailedCheck() != audit.CheckDatabasesPresent || (&runner.Preflight{SelfGrade: &grade.SelfGradeResult{}}).FailedCheck() != audit.CheckGoldSelfGrade {
		t.Error("runner.Preflight.FailedCheck does not name the reward audit's checks")
	}
}
