package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stages/jsonl"
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
	for i, q := range dev {
		if q.DBID == "" || q.Question == "" {
			return nil, fmt.Errorf("import spider: %s question %d has no db_id or question", o.Dev, i)
		}
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
		if err := checkTables(o.Tables, rows); err != nil {
			return nil, err
		}
		sources["tables"] = o.Tables
	}
	return build(ctx, o.Name, "spider", o.DBRoot, rows, sources)
}

// checkTables reads Spider's tables.json, which rlgate only hashes (the
// schemas come from the databases), so that a truncated or foreign file is
// refused rather than recorded as a source: it must be a list of schemas,
// each with a db_id given once and its tables, covering every database
// the questions use.
func checkTables(path string, rows []row) error {
	var tables []struct {
		DBID   string   `json:"db_id"`
		Tables []string `json:"table_names_original"`
	}
	if err := readJSON(path, &tables); err != nil {
		return err
	}
	seen := map[string]int{}
	for i, t := range tables {
		if t.DBID == "" || len(t.Tables) == 0 {
			return fmt.Errorf("import spider: %s item %d has no db_id or table_names_original", path, i)
		}
		if j, dup := seen[t.DBID]; dup {
			return fmt.Errorf("import spider: %s item %d repeats db_id %s of item %d", path, i, t.DBID, j)
		}
		seen[t.DBID] = i
	}
	for i, r := range rows {
		if _, ok := seen[r.dbID]; !ok {
			return fmt.Errorf("import spider: %s has no schema for database %s of question %d; is it truncated or from another release?", path, r.dbID, i)
		}
	}
	return nil
}

type goldLine struct{ sql, dbID string }

// readGoldSQL reads SQL<TAB>db_id lines, naming the line of any defect.
func readGoldSQL(path string) ([]goldLine, error) {
	raw, err := untrusted.ReadFile(path, untrusted.SourceLimit)
	if err != nil {
		return nil, fmt.Errorf("import spider: %w", err)
	}
	if err := jsonl.CheckText(raw); err != nil {
		return nil, fmt.Errorf("import spider: %s %w", path, err)
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
		if q.DBID == "" || q.SQL == "" || q.Question == "" {
			return nil, fmt.Errorf("import bird: %s question %d has no db_id, question or SQL", o.Dev, i)
		}
		rows[i] = row{dbID: q.DBID, question: q.Question, evidence: q.Evidence, sql: q.SQL, difficulty: q.Difficulty}
	}
	return build(ctx, o.Name, "bird", o.DBRoot, rows, map[string]string{"dev": o.Dev})
}

// readJSON decodes a source file, refusing one that is not clean text
// and naming the line of a syntax or type error (a truncated file ends in
// the middle of a value).
func readJSON(path string, v any) error {
	raw, err := untrusted.ReadFile(path, untrusted.SourceLimit)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := jsonl.CheckText(raw); err != nil {
		return fmt.Errorf("import %s %w", path, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn) && syn.Offset >= int64(len(bytes.TrimSpace(raw))):
			return fmt.Errorf("import %s line %d: truncated: %w", path, lineAt(raw, syn.Offset), err)
		case errors.As(err, &syn):
			return fmt.Errorf("import %s line %d: %w", path, lineAt(raw, syn.Offset), err)
		case errors.As(err, &typ):
			where := "the top level"
			if typ.Field != "" {
				where = "field " + typ.Field
			}
			return fmt.Errorf("import %s line %d: wrong shape: a JSON %s at %s, where the format has %s", path, lineAt(raw, typ.Offset), typ.Value, where, jsonKind(typ.Type))
		}
		return fmt.Errorf("import %s: %w", path, err)
	}
	return nil
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a number"
}

// lineAt is the 1-based line of byte offset off in raw.
func lineAt(raw []byte, off int64) int {
	return bytes.Count(raw[:min(off, int64(len(raw)))], []byte("\n")) + 1
}

func jsonUnmarshalStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
