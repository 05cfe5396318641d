package spidersql

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const spider = "../../testdata/spider"

// tablesJSON reads every database of a Spider tables.json: its schema
// (table_names_original and column_names_original, lower-cased) and its
// KeyMap (foreign_keys).
func tablesJSON(t testing.TB, path string) (map[string]Schema, map[string]KeyMap) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dbs []struct {
		DBID    string   `json:"db_id"`
		Tables  []string `json:"table_names_original"`
		Columns [][2]any `json:"column_names_original"`
		FKs     [][2]int `json:"foreign_keys"`
	}
	if err := json.Unmarshal(raw, &dbs); err != nil {
		t.Fatal(err)
	}
	schemas, kmaps := map[string]Schema{}, map[string]KeyMap{}
	for _, db := range dbs {
		s := Schema{}
		for _, tb := range db.Tables {
			s[strings.ToLower(tb)] = []string{}
		}
		cols := make([]Column, len(db.Columns))
		for i, c := range db.Columns {
			cols[i] = Column{Table: int(c[0].(float64)), Name: c[1].(string)}
			if cols[i].Table >= 0 {
				tb := strings.ToLower(db.Tables[cols[i].Table])
				s[tb] = append(s[tb], strings.ToLower(cols[i].Name))
			}
		}
		schemas[db.DBID], kmaps[db.DBID] = s, ForeignKeyMap(db.Tables, cols, db.FKs)
	}
	return schemas, kmaps
}

// lines reads a file's lines, each split at tabs.
func lines(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		out = append(out, strings.Split(s.Text(), "\t"))
	}
	return out
}

// TestHardnessMatchesOfficial: the hardness of all 1034 Spider dev gold
// queries, schemas from tables.json (which for the 19 databases present
// gives what get_schema reads from them, and covers wta_1), is the
// official evaluator's on every item (248 / 446 / 174 / 166).
func TestHardnessMatchesOfficial(t *testing.T) {
	schemas, _ := tablesJSON(t, spider+"/tables.json")
	gold := lines(t, spider+"/dev_gold.sql")
	official := lines(t, spider+"/dev_hardness.official.tsv")[1:]
	if len(gold) != 1034 || len(official) != 1034 {
		t.Fatalf("%d gold lines, %d official; want 1034", len(gold), len(official))
	}
	counts := map[string]int{}
	for i, g := range gold {
		q, err := Parse(schemas[g[1]], g[0])
		if err != nil {
			t.Errorf("item %d (%s): %v: %s", i, g[1], err, g[0])
			continue
		}
		h := Hardness(q)
		counts[h]++
		if want := official[i][2]; h != want {
			t.Errorf("item %d (%s): hardness %s, official %s: %s", i, g[1], h, want, g[0])
		}
	}
	t.Logf("hardness counts %v", counts)
}
