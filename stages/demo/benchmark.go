package demo

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// spider is the embedded Spider dev benchmark (see spider/README.md).
//
//go:embed spider/README.md spider/dev.json spider/dev_gold.sql spider/database
var spider embed.FS

// The parts of the benchmark's split, by database: SFT synthesis and SFT
// read one, RL another, and the evaluation a third, so no database (and no
// task) is shared between what trains and what is evaluated, nor between
// the SFT and the RL data.
const (
	PartSFT  = "sft"
	PartRL   = "rl"
	PartEval = "eval"
)

// partShares are the target shares of questions per part, in the order
// ties are broken.
var partShares = []struct {
	name  string
	share float64
}{{PartEval, 0.45}, {PartRL, 0.30}, {PartSFT, 0.25}}

// Part is one side of the split: its databases and its questions, as
// positions in the official dev.json.
type Part struct {
	Name      string   `json:"name"`
	DBs       []string `json:"databases"`
	Questions int      `json:"questions"`
	rows      []question
}

type question struct {
	DBID     string `json:"db_id"`
	Question string `json:"question"`
	gold     string // the dev_gold.sql line, SQL<TAB>db_id
}

// Split reads the embedded benchmark and splits it by database: databases
// in order of falling question count (then name) each go to the part
// furthest below its target share (eval 45%, rl 30%, sft 25%). The rule
// needs no seed, so every demo evaluates the same questions: world_1,
// car_1, flight_2, network_1, orchestra, course_teach and museum_visit (436
// questions) are evaluated. Questions whose database is absent (wta_1) are
// left out.
func Split() ([]Part, error) {
	qs, err := questions()
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, q := range qs {
		count[q.DBID]++
	}
	dbs := make([]string, 0, len(count))
	for db := range count {
		dbs = append(dbs, db)
	}
	slices.SortFunc(dbs, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]Part, len(partShares))
	for i, p := range partShares {
		parts[i].Name = p.name
	}
	for _, db := range dbs {
		best := 0
		for i := range parts {
			if float64(parts[i].Questions)/float64(len(qs))-partShares[i].share < float64(parts[best].Questions)/float64(len(qs))-partShares[best].share {
				best = i
			}
		}
		parts[best].DBs = append(parts[best].DBs, db)
		parts[best].Questions += count[db]
	}
	for i := range parts {
		for _, q := range qs {
			if slices.Contains(parts[i].DBs, q.DBID) {
				parts[i].rows = append(parts[i].rows, q)
			}
		}
	}
	return parts, nil
}

// questions reads the embedded questions with their gold lines, keeping
// those whose database is embedded.
func questions() ([]question, error) {
	raw, err := spider.ReadFile("spider/dev.json")
	if err != nil {
		return nil, err
	}
	var qs []question
	if err := json.Unmarshal(raw, &qs); err != nil {
		return nil, fmt.Errorf("embedded spider/dev.json: %w", err)
	}
	gold, err := spider.ReadFile("spider/dev_gold.sql")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(gold))
	for i := 0; sc.Scan(); i++ {
		if i >= len(qs) {
			return nil, fmt.Errorf("embedded spider/dev_gold.sql has more lines than dev.json has questions")
		}
		qs[i].gold = sc.Text()
	}
	out := qs[:0]
	for _, q := range qs {
		if _, err := fs.Stat(spider, dbFile(q.DBID)); err == nil {
			out = append(out, q)
		}
	}
	return out, nil
}

func dbFile(db string) string { return path.Join("spider/database", db, db+".sqlite") }

// UnpackOptions change what Unpack writes.
type UnpackOptions struct {
	// GoldInQuestions appends each evaluation question's gold SQL to the
	// question, a leak the gold audit must catch (rlgate demo --inject
	// leak).
	GoldInQuestions bool
}

// Unpack writes the split benchmark under dir as Spider-format sources
// rlgate data import reads: dir/<part>/dev.json, dev_gold.sql and
// database/<db_id>/<db_id>.sqlite for each part, and dir/README.md with
// the source and licence. It returns the parts.
func Unpack(dir string, o UnpackOptions) ([]Part, error) {
	parts, err := Split()
	if err != nil {
		return nil, err
	}
	readme, err := spider.ReadFile("spider/README.md")
	if err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, "README.md"), readme); err != nil {
		return nil, err
	}
	for _, p := range parts {
		pdir := filepath.Join(dir, p.Name)
		var dev, gold bytes.Buffer
		dev.WriteString("[\n")
		for i, q := range p.rows {
			if o.GoldInQuestions && p.Name == PartEval {
				sql, _, _ := strings.Cut(q.gold, "\t")
				q.Question += " (The answer is " + sql + ".)"
			}
			line, err := json.Marshal(q)
			if err != nil {
				return nil, err
			}
			dev.Write(line)
			if i < len(p.rows)-1 {
				dev.WriteString(",")
			}
			dev.WriteString("\n")
			gold.WriteString(q.gold + "\n")
		}
		dev.WriteString("]\n")
		if err := writeFile(filepath.Join(pdir, "dev.json"), dev.Bytes()); err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(pdir, "dev_gold.sql"), gold.Bytes()); err != nil {
			return nil, err
		}
		for _, db := range p.DBs {
			raw, err := spider.ReadFile(dbFile(db))
			if err != nil {
				return nil, err
			}
			if err := writeFile(filepath.Join(pdir, "database", db, db+".sqlite"), raw); err != nil {
				return nil, err
			}
		}
	}
	return parts, nil
}

func writeFile(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}
