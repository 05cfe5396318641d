package dataset

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/tasks"
)

var ctx = context.Background()

const spider = "../../testdata/spider"

func TestImportSpider(t *testing.T) {
	im, err := ImportSpider(ctx, SpiderOptions{Dev: spider + "/dev.json", Gold: spider + "/dev_gold.sql", Tables: spider + "/tables.json", DBRoot: spider + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	// wta_1 (62 questions) is missing from the shipped databases.
	if len(im.Tasks) != 972 || len(im.Manifest.Skipped) != 62 || im.Manifest.Skipped[0].DBID != "wta_1" {
		t.Fatalf("%d tasks, %d skipped", len(im.Tasks), len(im.Manifest.Skipped))
	}
	first := im.Tasks[0]
	if first.ID != "spider-0000" || first.Index != 0 || first.DBID != "concert_singer" || first.Question != "How many singers do we have?" {
		t.Errorf("first task %+v", first)
	}
	if !strings.Contains(first.Schema, "CREATE TABLE") || !strings.Contains(first.Schema, "-- Example values:") {
		t.Errorf("schema:\n%s", first.Schema)
	}
	if im.Gold[0].SQL != "SELECT count(*) FROM singer" || im.Gold[0].ID != first.ID {
		t.Errorf("gold %+v", im.Gold[0])
	}
	// Positions survive skipping: the task after the wta_1 block keeps its index.
	last := im.Tasks[len(im.Tasks)-1]
	if last.Index != 1033 {
		t.Errorf("last index %d", last.Index)
	}

	dir := t.TempDir()
	if err := im.WriteDir(dir, false); err != nil {
		t.Fatal(err)
	}
	back, err := tasks.Read(filepath.Join(dir, TasksFile))
	if err != nil || len(back) != 972 {
		t.Fatalf("read back tasks: %d, %v", len(back), err)
	}
	golds, err := gold.Read(filepath.Join(dir, GoldFile))
	if err != nil || len(golds) != 972 {
		t.Fatalf("read back gold: %d, %v", len(golds), err)
	}
	m, err := ReadManifest(dir)
	if err != nil || m.Tasks.Count != 972 || m.Tasks.Digest == m.Gold.Digest || len(m.Databases) != 19 {
		t.Errorf("manifest %+v, %v", m, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, TasksFile))
	if strings.Contains(string(raw), "SELECT count(*) FROM singer") && !strings.Contains(first.Schema, "SELECT count(*) FROM singer") {
		t.Error("gold SQL appears in tasks.jsonl")
	}
}

func TestSchemaRenderingIsDeterministic(t *testing.T) {
	a, err := ImportBird(ctx, BirdOptions{Dev: "../../testdata/bird/mini_dev_sqlite.json", DBRoot: "../../testdata/bird/dev_databases"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ImportBird(ctx, BirdOptions{Dev: "../../testdata/bird/mini_dev_sqlite.json", DBRoot: "../../testdata/bird/dev_databases"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tasks) != 140 || len(a.Manifest.Skipped) != 360 {
		t.Fatalf("bird mini-dev: %d tasks, %d skipped", len(a.Tasks), len(a.Manifest.Skipped))
	}
	for i := range a.Tasks {
		if a.Tasks[i].Schema != b.Tasks[i].Schema {
			t.Fatalf("task %s: schema differs between two imports", a.Tasks[i].ID)
		}
	}
	if a.Gold[0].Difficulty == "" || a.Tasks[0].Evidence == "" {
		t.Errorf("bird fields lost: %+v %+v", a.Tasks[0], a.Gold[0])
	}
}

func TestTasksReaderRefusesGold(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(p, []byte(`{"id":"x-0000","index":0,"dataset":"x","db_id":"d","question":"q","schema":"s"}`+"\n"+
		`{"id":"x-0001","index":1,"dataset":"x","db_id":"d","question":"q","schema":"s","SQL":"SELECT 1"}`+"\n"), 0o644)
	_, err := tasks.Read(p)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), `"SQL"`) {
		t.Errorf("got %v", err)
	}
}

func TestImportSpiderBadInput(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.sql")
	os.WriteFile(short, []byte("SELECT 1\tconcert_singer\n"), 0o644)
	notab := filepath.Join(dir, "notab.sql")
	raw, _ := os.ReadFile(spider + "/dev_gold.sql")
	lines := strings.Split(string(raw), "\n")
	lines[4] = "SELECT 1 concert_singer"
	os.WriteFile(notab, []byte(strings.Join(lines, "\n")), 0o644)
	for name, tt := range map[string]struct{ gold, want string }{
		"line count": {short, "has 1 lines but"},
		"no tab":     {notab, "line 5 has no TAB"},
	} {
		_, err := ImportSpider(ctx, SpiderOptions{Dev: spider + "/dev.json", Gold: tt.gold, DBRoot: spider + "/database"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", name, err, tt.want)
		}
	}
}

// skyrlMessage and skyrlRow write a parquet file shaped like SkyRL's
// text2sql data as pandas writes it: optional strings, a list of structs,
// a nested reward_spec, and columns we do not read.
type skyrlMessage struct {
	Role    *string `parquet:"role,optional"`
	Content *string `parquet:"content,optional"`
}

type skyrlRow struct {
	DataSource *string        `parquet:"data,optional"`
	Prompt     []skyrlMessage `parquet:"prompt,list"`
	DBID       *string        `parquet:"db_id,optional"`
	EnvClass   *string        `parquet:"env_class,optional"`
	RewardSpec struct {
		Method      *string `parquet:"method,optional"`
		GroundTruth *string `parquet:"ground_truth,optional"`
	} `parquet:"reward_spec"`
}

func TestImportSkyRLParquet(t *testing.T) {
	s := func(v string) *string { return &v }
	var rows []skyrlRow
	for i, q := range []struct{ db, question, sql string }{
		{"concert_singer", "How many singers do we have?", "SELECT count(*) FROM singer"},
		{"pets_1", "Find the number of pets whose weight is heavier than 10.", "SELECT count(*) FROM pets WHERE weight > 10"},
		{"no_such_db", "Unanswerable here", "SELECT 1"},
	} {
		r := skyrlRow{DataSource: s("spider"), DBID: s(q.db), EnvClass: s("text2sql"),
			Prompt: []skyrlMessage{{Role: s("system"), Content: s("You are a SQL expert.")}, {Role: s("user"), Content: s(q.question)}}}
		r.RewardSpec.Method, r.RewardSpec.GroundTruth = s("rule"), s(q.sql)
		rows = append(rows, r)
		_ = i
	}
	p := filepath.Join(t.TempDir(), "train.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := parquet.Write(f, rows); err != nil {
		t.Fatal(err)
	}
	f.Close()
	im, err := ImportSkyRL(ctx, SkyRLOptions{Parquet: p, DBRoot: spider + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Tasks) != 2 || len(im.Manifest.Skipped) != 1 || im.Manifest.Skipped[0].Index != 2 {
		t.Fatalf("%d tasks, skipped %+v", len(im.Tasks), im.Manifest.Skipped)
	}
	if im.Tasks[1].Question != "Find the number of pets whose weight is heavier than 10." || im.Gold[1].SQL != "SELECT count(*) FROM pets WHERE weight > 10" || im.Tasks[1].ID != "skyrl-0001" {
		t.Errorf("task %+v gold %+v", im.Tasks[1], im.Gold[1])
	}
}

// TestDBRootRecordedAbsolute: grading runs from any directory, so the
// database root an import records must not depend on where it ran.
func TestDBRootRecordedAbsolute(t *testing.T) {
	im, err := ImportBird(ctx, BirdOptions{Dev: "../../testdata/bird/mini_dev_sqlite.json", DBRoot: "../../testdata/bird/dev_databases"})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(im.Manifest.DBRoot) {
		t.Errorf("db_root %q is relative", im.Manifest.DBRoot)
	}
}

// TestTaskSetDigestIgnoresOrderAndRepeats pins the task-set definition that
// runs, gradings and comparisons record.
func TestTaskSetDigestIgnoresOrderAndRepeats(t *testing.T) {
	a := tasks.SetDigest([]string{"spider-0002", "spider-0000", "spider-0001"})
	b := tasks.SetDigest([]string{"spider-0000", "spider-0001", "spider-0002", "spider-0001"})
	if a != b {
		t.Error("order or a repeat changed the task-set digest")
	}
	if a == tasks.SetDigest([]string{"spider-0000", "spider-0001"}) {
		t.Error("a smaller set has the same digest")
	}
	// BLAKE3("spider-0000\nspider-0001\nspider-0002\n"), computed with b3sum.
	if got := a.Hex(); got != "81a94215c0fb88b865f3b517235c2cce8d365c72079295cdd2f3fc18c2c6db80" {
		t.Errorf("task-set digest %s, want b3sum's", got)
	}
}
