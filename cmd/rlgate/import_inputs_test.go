package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
)

const (
	importInputsSpider = "../../testdata/spider"
	importInputsBird   = "../../testdata/bird"
)

// importInputsLedger points RLGATE_LEDGER at a fresh ledger in dir.
func importInputsLedger(t *testing.T, dir string) {
	t.Helper()
	t.Setenv(ledger.EnvLedger, filepath.Join(dir, "ledger"))
	if code, _, errOut := rlgate(t, "init"); code != exitOK {
		t.Fatal(errOut)
	}
}

// importInputsEdit writes a copy of src into dir with edit applied.
func importInputsEdit(t *testing.T, dir, src string, edit func([]byte) []byte) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(p, edit(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func importInputsCut(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }

func importInputsReplace(old, new string) func([]byte) []byte {
	return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
}

func importInputsDropLine(i int) func([]byte) []byte {
	return func(b []byte) []byte {
		lines := bytes.SplitAfter(b, []byte("\n"))
		return bytes.Join(append(lines[:i:i], lines[i+1:]...), nil)
	}
}

// importInputsSkyRLRow is a row of a SkyRL text2sql parquet file.
type importInputsSkyRLRow struct {
	Prompt []struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	} `parquet:"prompt,list"`
	DBID       string `parquet:"db_id"`
	RewardSpec struct {
		GroundTruth string `parquet:"ground_truth"`
	} `parquet:"reward_spec"`
}

func importInputsParquet(t *testing.T, dir string, questions ...string) string {
	t.Helper()
	var rows []importInputsSkyRLRow
	for _, q := range questions {
		var r importInputsSkyRLRow
		r.Prompt = append(r.Prompt, struct {
			Role    string `parquet:"role"`
			Content string `parquet:"content"`
		}{"user", q})
		r.DBID, r.RewardSpec.GroundTruth = "concert_singer", "SELECT count(*) FROM singer"
		rows = append(rows, r)
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "train.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportRefusesDefectiveInputs: every input an importer reads, with
// each defect (truncated, wrong shape, a count that differs, a repeated
// id, invalid UTF-8, a NUL byte), is a one-line error naming the file and
// the line or item, exit 1, and nothing is written.
func TestImportRefusesDefectiveInputs(t *testing.T) {
	dir := t.TempDir()
	importInputsLedger(t, dir)
	spiderArgs := func(dev, gold, tables string) []string {
		return []string{"data", "import", "spider", "--dev", dev, "--gold", gold, "--tables", tables, "--db-root", importInputsSpider + "/database"}
	}
	dev, gold, tables := importInputsSpider+"/dev.json", importInputsSpider+"/dev_gold.sql", importInputsSpider+"/tables.json"
	for _, tt := range []struct {
		name string
		args func(d string) []string
		want []string // in the one-line error
	}{
		{"spider dev.json truncated", func(d string) []string {
			return spiderArgs(importInputsEdit(t, d, dev, importInputsCut(5000)), gold, tables)
		}, []string{"dev.json line", "truncated"}},
		{"spider dev.json wrong shape", func(d string) []string {
			return spiderArgs(importInputsEdit(t, d, dev, func([]byte) []byte { return []byte(`{"db_id": "concert_singer"}`) }), gold, tables)
		}, []string{"dev.json line 1", "wrong shape"}},
		{"spider dev.json item without question", func(d string) []string {
			return spiderArgs(importInputsEdit(t, d, dev, importInputsReplace(`"question": "How many singers do we have?"`, `"q": ""`)), gold, tables)
		}, []string{"dev.json question 0 has no db_id or question"}},
		{"spider dev.json invalid UTF-8", func(d string) []string {
			return spiderArgs(importInputsEdit(t, d, dev, importInputsReplace("How many singers", "How \xff singers")), gold, tables)
		}, []string{"dev.json line", "invalid UTF-8"}},
		{"spider dev.json NUL byte", func(d string) []string {
			return spiderArgs(importInputsEdit(t, d, dev, func(b []byte) []byte { return append(b, 0, 0, 0) }), gold, tables)
		}, []string{"dev.json line", "NUL byte"}},
		{"spider dev.json escaped NUL", func(d string) []string {
			return spiderArgs(importInputsEdit(t, d, dev, importInputsReplace("How many singers", `How\u0000many singers`)), gold, tables)
		}, []string{"source item 0: question", "NUL byte"}},
		{"spider dev_gold.sql a line short", func(d string) []string {
			return spiderArgs(dev, importInputsEdit(t, d, gold, importInputsDropLine(500)), tables)
		}, []string{"dev_gold.sql has 1033 lines but", "1034 questions"}},
		{"spider dev_gold.sql truncated", func(d string) []string {
			return spiderArgs(dev, importInputsEdit(t, d, gold, importInputsCut(20)), tables)
		}, []string{"dev_gold.sql line 1 has no TAB"}},
		{"spider dev_gold.sql invalid UTF-8", func(d string) []string {
			return spiderArgs(dev, importInputsEdit(t, d, gold, importInputsReplace("FROM singer", "FROM s\xc3nger")), tables)
		}, []string{"dev_gold.sql line 1: invalid UTF-8"}},
		{"spider dev_gold.sql NUL byte", func(d string) []string {
			return spiderArgs(dev, importInputsEdit(t, d, gold, importInputsReplace("FROM singer", "FROM \x00singer")), tables)
		}, []string{"dev_gold.sql line 1 byte", "NUL byte"}},
		{"spider tables.json truncated", func(d string) []string {
			return spiderArgs(dev, gold, importInputsEdit(t, d, tables, importInputsCut(100000)))
		}, []string{"tables.json line", "truncated"}},
		{"spider tables.json wrong shape", func(d string) []string {
			return spiderArgs(dev, gold, importInputsEdit(t, d, tables, func([]byte) []byte { return []byte("[1, 2]\n") }))
		}, []string{"tables.json line 1", "wrong shape"}},
		{"spider tables.json repeated db_id", func(d string) []string {
			return spiderArgs(dev, gold, importInputsEdit(t, d, tables, importInputsReplace(`"db_id": "perpetrator"`, `"db_id": "college_2"`)))
		}, []string{"tables.json item 1 repeats db_id college_2 of item 0"}},
		{"spider tables.json without a database", func(d string) []string {
			return spiderArgs(dev, gold, importInputsEdit(t, d, tables, importInputsReplace(`"db_id": "concert_singer"`, `"db_id": "concert_singer_x"`)))
		}, []string{"tables.json has no schema for database concert_singer of question 0"}},
		{"bird dev.json truncated", func(d string) []string {
			return []string{"data", "import", "bird", "--dev", importInputsEdit(t, d, importInputsBird+"/mini_dev_sqlite.json", importInputsCut(3000)), "--db-root", importInputsBird + "/dev_databases"}
		}, []string{"mini_dev_sqlite.json line", "truncated"}},
		{"bird dev.json item without question", func(d string) []string {
			edit := func(b []byte) []byte {
				var v []map[string]any
				json.Unmarshal(b, &v)
				delete(v[2], "question")
				out, _ := json.Marshal(v)
				return out
			}
			return []string{"data", "import", "bird", "--dev", importInputsEdit(t, d, importInputsBird+"/mini_dev_sqlite.json", edit), "--db-root", importInputsBird + "/dev_databases"}
		}, []string{"mini_dev_sqlite.json question 2 has no db_id, question or SQL"}},
		{"bird dev.json invalid UTF-8", func(d string) []string {
			return []string{"data", "import", "bird", "--dev", importInputsEdit(t, d, importInputsBird+"/mini_dev_sqlite.json", importInputsReplace("What", "Wh\xe9t")), "--db-root", importInputsBird + "/dev_databases"}
		}, []string{"mini_dev_sqlite.json line", "invalid UTF-8"}},
		{"skyrl parquet truncated", func(d string) []string {
			p := importInputsParquet(t, d, "How many singers do we have?")
			raw, _ := os.ReadFile(p)
			os.WriteFile(p, raw[:len(raw)/2], 0o644)
			return []string{"data", "import", "skyrl", "--parquet", p, "--db-root", importInputsSpider + "/database"}
		}, []string{"import skyrl", "train.parquet"}},
		{"skyrl parquet invalid UTF-8", func(d string) []string {
			p := importInputsParquet(t, d, "How many singers?", "How \xff many?")
			return []string{"data", "import", "skyrl", "--parquet", p, "--db-root", importInputsSpider + "/database"}
		}, []string{"import skyrl: source item 1: question", "invalid UTF-8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			out := filepath.Join(d, "out")
			code, _, errOut := rlgate(t, append(tt.args(d), "--out", out)...)
			if code != exitError {
				t.Errorf("exit %d, want %d; stderr %q", code, exitError, errOut)
			}
			line := strings.TrimSpace(errOut)
			for _, w := range tt.want {
				if !strings.Contains(line, w) || strings.Contains(line, "\n") {
					t.Errorf("stderr %q: want one line containing %q", line, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused import wrote %s", out)
			}
		})
	}
}

// TestImportRefusesNonEmptyOut: importing BIRD over a Spider import is
// refused; with --force it replaces the import's files and leaves
// every other file as it was.
func TestImportRefusesNonEmptyOut(t *testing.T) {
	dir := t.TempDir()
	importInputsLedger(t, dir)
	out := filepath.Join(dir, "data")
	p := importInputsParquet(t, dir, "How many singers do we have?")
	if code, _, errOut := rlgate(t, "data", "import", "skyrl", "--parquet", p, "--db-root", importInputsSpider+"/database", "--out", out); code != exitOK {
		t.Fatal(errOut)
	}
	notes := filepath.Join(out, "NOTES.md")
	os.WriteFile(notes, []byte("kept\n"), 0o644)
	before, _ := os.ReadFile(filepath.Join(out, dataset.ManifestFile))

	bird := []string{"data", "import", "bird", "--dev", importInputsBird + "/mini_dev_sqlite.json", "--db-root", importInputsBird + "/dev_databases", "--out", out}
	code, _, errOut := rlgate(t, bird...)
	if code != exitError || !strings.Contains(errOut, "import into "+out+": output directory is not empty") || !strings.Contains(errOut, "--force") {
		t.Errorf("import over an import: exit %d, %q", code, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(out, dataset.ManifestFile)); !bytes.Equal(before, after) {
		t.Error("the refused import changed manifest.json")
	}

	if code, _, errOut := rlgate(t, append(bird, "--force")...); code != exitOK {
		t.Fatalf("--force: exit %d, %s", code, errOut)
	}
	m, err := dataset.ReadManifest(out)
	if err != nil || m.Kind != "bird" {
		t.Fatalf("after --force: %+v, %v", m, err)
	}
	var names []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"NOTES.md", "gold.jsonl", "manifest.json", "tasks.jsonl"}, names); diff != "" {
		t.Errorf("files after --force (-want +got):\n%s", diff)
	}
	if raw, _ := os.ReadFile(notes); string(raw) != "kept\n" {
		t.Errorf("NOTES.md changed: %q", raw)
	}
}

// TestGradeRefusesDefectiveInputs: every input grade reads (the dataset's
// manifest and gold, the predictions in each format), with each defect,
// is a one-line error naming the file and line or item, exit 1, before
// any run starts.
func TestGradeRefusesDefectiveInputs(t *testing.T) {
	dir := t.TempDir()
	importInputsLedger(t, dir)
	data := filepath.Join(dir, "bird")
	if code, _, errOut := rlgate(t, "data", "import", "bird", "--dev", importInputsBird+"/mini_dev_sqlite.json", "--db-root", importInputsBird+"/dev_databases", "--out", data); code != exitOK {
		t.Fatal(errOut)
	}
	birdPreds := importInputsBird + "/predictions/gpt-4.json"
	txtPreds := importInputsBird + "/mini_dev_sqlite_gold.sql" // SQL<TAB>db_id: spider-txt reads the SQL
	// dataset copies the import with one file edited.
	dataset := func(t *testing.T, name string, edit func([]byte) []byte) string {
		d := filepath.Join(t.TempDir(), "bird")
		os.MkdirAll(d, 0o755)
		for _, f := range []string{"tasks.jsonl", "gold.jsonl", "manifest.json"} {
			raw, _ := os.ReadFile(filepath.Join(data, f))
			if f == name {
				raw = edit(raw)
			}
			os.WriteFile(filepath.Join(d, f), raw, 0o644)
		}
		return d
	}
	for _, tt := range []struct {
		name string
		args func(t *testing.T) []string // --tasks, --predictions, --format
		want []string
	}{
		{"gold.jsonl truncated", func(t *testing.T) []string {
			return []string{"--tasks", dataset(t, "gold.jsonl", func(b []byte) []byte { return b[:len(b)-40] }), "--predictions", birdPreds, "--format", "bird-json"}
		}, []string{"gold.jsonl line 140", "unexpected EOF"}},
		{"gold.jsonl a line short", func(t *testing.T) []string {
			return []string{"--tasks", dataset(t, "gold.jsonl", importInputsDropLine(7)), "--predictions", birdPreds, "--format", "bird-json"}
		}, []string{"gold.jsonl", "139 entries", "recorded", "with 140", "--force"}},
		{"gold.jsonl repeated id", func(t *testing.T) []string {
			return []string{"--tasks", dataset(t, "gold.jsonl", func(b []byte) []byte {
				lines := bytes.SplitAfter(b, []byte("\n"))
				lines[1] = lines[0]
				return bytes.Join(lines, nil)
			}), "--predictions", birdPreds, "--format", "bird-json"}
		}, []string{"gold.jsonl: entry 1 has id bird-0", "as entry 0 does"}},
		{"gold.jsonl invalid UTF-8", func(t *testing.T) []string {
			return []string{"--tasks", dataset(t, "gold.jsonl", importInputsReplace("SELECT", "SEL\xffCT")), "--predictions", birdPreds, "--format", "bird-json"}
		}, []string{"gold.jsonl line 1: invalid UTF-8"}},
		{"gold.jsonl NUL byte", func(t *testing.T) []string {
			return []string{"--tasks", dataset(t, "gold.jsonl", importInputsReplace("SELECT", "SEL\x00CT")), "--predictions", birdPreds, "--format", "bird-json"}
		}, []string{"gold.jsonl line 1 byte", "NUL byte"}},
		{"manifest.json truncated", func(t *testing.T) []string {
			return []string{"--tasks", dataset(t, "manifest.json", func(b []byte) []byte { return b[:len(b)/2] }), "--predictions", birdPreds, "--format", "bird-json"}
		}, []string{"manifest.json", "unexpected EOF"}},
		{"bird-json truncated", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), birdPreds, importInputsCut(5000)), "--format", "bird-json"}
		}, []string{"gpt-4.json", "read bird-json predictions"}},
		{"bird-json invalid UTF-8", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), birdPreds, importInputsReplace("SELECT", "S\xc3LECT")), "--format", "bird-json"}
		}, []string{"gpt-4.json", "line 2: invalid UTF-8"}},
		{"bird-json NUL byte", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), birdPreds, importInputsReplace("SELECT", "SE\x00LECT")), "--format", "bird-json"}
		}, []string{"gpt-4.json", "line 2 byte", "NUL byte"}},
		{"bird-json a prediction short", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), birdPreds, func(b []byte) []byte {
				var m map[string]string
				json.Unmarshal(b, &m)
				delete(m, "499")
				out, _ := json.Marshal(m)
				return out
			}), "--format", "bird-json"}
		}, []string{"gpt-4.json", "499 predictions for 500 gold queries"}},
		{"bird-json repeated key", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), birdPreds, func(b []byte) []byte {
				end := bytes.LastIndexByte(b, '}')
				return append(b[:end:end], []byte(`, "0": "SELECT 1\t----- bird -----\tfinancial"}`)...)
			}), "--format", "bird-json"}
		}, []string{"gpt-4.json", `key "0"`, "duplicate key"}},
		{"spider-txt NUL byte", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), txtPreds, importInputsReplace("SELECT", "SELECT\x00")), "--format", "spider-txt"}
		}, []string{"mini_dev_sqlite_gold.sql", "line 1 byte 7: NUL byte"}},
		{"spider-txt invalid UTF-8", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), txtPreds, importInputsReplace("SELECT", "SEL\xffECT")), "--format", "spider-txt"}
		}, []string{"mini_dev_sqlite_gold.sql", "line 1: invalid UTF-8"}},
		{"spider-txt a line short", func(t *testing.T) []string {
			return []string{"--tasks", data, "--predictions", importInputsEdit(t, t.TempDir(), txtPreds, importInputsDropLine(10)), "--format", "spider-txt"}
		}, []string{"mini_dev_sqlite_gold.sql", "499 predictions for 500 gold queries"}},
		{"jsonl repeated index", func(t *testing.T) []string {
			p := filepath.Join(t.TempDir(), "preds.jsonl")
			os.WriteFile(p, []byte("{\"index\": 0, \"sql\": \"SELECT 1\"}\n{\"index\": 0, \"sql\": \"SELECT 2\"}\n"), 0o644)
			return []string{"--tasks", data, "--predictions", p, "--format", "jsonl"}
		}, []string{"preds.jsonl", "line 2: index 0 already on line 1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := rlgate(t, append([]string{"grade", "--metric", "bird"}, tt.args(t)...)...)
			line := strings.TrimSpace(errOut)
			if code != exitError || strings.Contains(line, "\n") {
				t.Errorf("exit %d, want %d with one line; stderr %q", code, exitError, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("stderr %q lacks %q", line, w)
				}
			}
		})
	}
	if code, stdout, _ := rlgate(t, "log", "--kind", "run.start", "--json"); code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a refused grading started a run: %s", stdout)
	}
}
