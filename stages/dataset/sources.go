package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// SpiderOptions locate Spider's files: dev.json (questions), dev_gold.sql
// (SQL<TAB>db_id per line, the official gold) and database/.
type SpiderOptions struct {
	Name   string // dataset name, the prefix of task ids; default "spider"
	Dev    string
	Gold   string
	Tables string // tables.json: hashed as a source; schemas come from the databases
	DBRoot string
}

// ImportSpider reads Spider. The gold SQL comes from dev_gold.sql, which
// the official evaluator reads; its db_id must agree with dev.json line by
// line.
func ImportSpider(ctx context.Context, o SpiderOptions) (*Imported, error) {
	if o.Name == "" {
		o.Name = "spider"
	}
	var dev []struct {
		DBID     string `json:"db_id"`
		Question string `json:"question"`
	}
	if err := readJSON(o.Dev, &dev); err != nil {
		return nil, err
	}
	golds, err := readGoldSQL(o.Gold)
	if err != nil {
		return nil, err
	}
	if len(golds) != len(dev) {
		return nil, fmt.Errorf("import spider: %s has %d lines but %s has %d questions; they must align line by line", o.Gold, len(golds), o.Dev, len(dev))
	}
	rows := make([]row, len(dev))
	for i, q := range dev {
		if golds[i].dbID != q.DBID {
			return nil, fmt.Errorf("import spider: %s line %d is on database %s but question %d of %s is on %s", o.Gold, i+1, golds[i].dbID, i, o.Dev, q.DBID)
		}
		rows[i] = row{dbID: q.DBID, question: q.Question, sql: golds[i].sql}
	}
	sources := map[string]string{"dev": o.Dev, "gold": o.Gold}
	if o.Tables != "" {
		sources["tables"] = o.Tables
	}
	return build(ctx, o.Name, "spider", o.DBRoot, rows, sources)
}

type goldLine struct{ sql, dbID string }

// readGoldSQL reads SQL<TAB>db_id lines, naming the line of any defect.
func readGoldSQL(path string) ([]goldLine, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("import spider: %w", err)
	}
	var out []goldLine
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			return nil, fmt.Errorf("import spider: %s line %d is blank; every line must be SQL<TAB>db_id", path, n)
		}
		i := strings.LastIndex(line, "\t")
		if i < 0 {
			return nil, fmt.Errorf("import spider: %s line %d has no TAB before the db_id", path, n)
		}
		out = append(out, goldLine{sql: strings.TrimSpace(line[:i]), dbID: strings.TrimSpace(line[i+1:])})
	}
	return out, sc.Err()
}

// BirdOptions locate BIRD's files: dev.json or mini_dev_sqlite.json (with
// question, evidence, SQL and difficulty) and dev_databases/.
type BirdOptions struct {
	Name   string // default "bird"
	Dev    string
	DBRoot string
}

// ImportBird reads BIRD dev or mini-dev.
func ImportBird(ctx context.Context, o BirdOptions) (*Imported, error) {
	if o.Name == "" {
		o.Name = "bird"
	}
	var dev []struct {
		DBID       string `json:"db_id"`
		Question   string `json:"question"`
		Evidence   string `json:"evidence"`
		SQL        string `json:"SQL"`
		Difficulty string `json:"difficulty"`
	}
	if err := readJSON(o.Dev, &dev); err != nil {
		return nil, err
	}
	rows := make([]row, len(dev))
	for i, q := range dev {
		if q.DBID == "" || q.SQL == "" {
			return nil, fmt.Errorf("import bird: %s question %d has no db_id or SQL", o.Dev, i)
		}
		rows[i] = row{dbID: q.DBID, question: q.Question, evidence: q.Evidence, sql: q.SQL, difficulty: q.Difficulty}
	}
	return build(ctx, o.Name, "bird", o.DBRoot, rows, map[string]string{"dev": o.Dev})
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	return nil
}

func jsonUnmarshalStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
