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

// The parts of the benchmark's split: the evaluation holds its own
// databases; SFT synthesis and SFT read one half of the questions on the
// other databases, RL the other half, so no database (and no task) is
// shared between what trains and what is evaluated, and no task between
// the SFT and the RL data.
const (
	PartSFT  = "sft"
	PartRL   = "rl"
	PartEval = "eval"
)

// Part is one side of the split: its databases and its questions.
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

// Split reads the embedded benchmark and splits it. Databases in order of
// falling question count (then name) go alternately to training and to
// the evaluation, which so gets car_1, dog_kennels,
// student_transcripts_tracking, network_1, pets_1, poker_player,
// course_teach, museum_visit and voter_1 (453 questions); the training
// databases' questions, in the official order, go alternately to sft and
// rl. The rule needs no seed, so every demo evaluates the same questions.
// Questions whose database is absent (wta_1) are left out. The parts come
// in the order eval, rl, sft.
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
	eval, rl, sft := &Part{Name: PartEval}, &Part{Name: PartRL}, &Part{Name: PartSFT}
	evalDB := map[string]bool{}
	for i, db := range dbs {
		if i%2 == 1 {
			evalDB[db] = true
			eval.DBs = append(eval.DBs, db)
		} else {
			sft.DBs = append(sft.DBs, db)
		}
	}
	rl.DBs = slices.Clone(sft.DBs)
	train := 0
	for _, q := range qs {
		p := eval
		if !evalDB[q.DBID] {
			p = map[bool]*Part{true: sft, false: rl}[train%2 == 0]
			train++
		}
		p.rows = append(p.rows, q)
		p.Questions++
	}
	return []Part{*eval, *rl, *sft}, nil
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
