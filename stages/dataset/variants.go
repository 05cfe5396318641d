package dataset

import (
	"context"
	"fmt"
	"strings"
)

// SpiderVariant names an evaluation set published as one JSON list in
// Spider's question format, on Spider's databases (or, for Spider-DK, on
// Spider's merged with its own), with the gold SQL in each record's
// "query" field: none ships a dev_gold.sql.
type SpiderVariant string

// The Spider variants the seeds evaluate on.
const (
	// SpiderDK is Spider-DK (Gan et al., EMNLP 2021): Spider-DK.json, items
	// {type, db_id, query, question}, on Spider's dev databases merged with
	// its three new_* databases, schemas in its own tables.json.
	SpiderDK SpiderVariant = "spider-dk"
	// SpiderRealistic is Spider-Realistic (Deng et al., NAACL 2021):
	// spider-realistic.json, Spider dev records with the questions reworded.
	SpiderRealistic SpiderVariant = "spider-realistic"
	// SpiderSyn is Spider-Syn (Gan et al., ACL 2021): dev.json, items
	// {db_id, SpiderQuestion, SpiderSynQuestion, query}; the task's
	// question is SpiderSynQuestion, the synonym-substituted one the set
	// exists to test.
	SpiderSyn SpiderVariant = "spider-syn"
)

// SpiderVariants lists the variants, in the order help text shows them.
var SpiderVariants = []SpiderVariant{SpiderDK, SpiderRealistic, SpiderSyn}

// VariantOptions locate a Spider variant's files.
type VariantOptions struct {
	Variant SpiderVariant
	Name    string // default: the variant's name
	Dev     string // the question file
	Tables  string // optional tables.json (Spider-DK's own): hashed and checked as for Spider
	DBRoot  string
}

// ImportSpiderVariant reads a Spider variant. Every record needs a db_id,
// a question and a query; a record without one is an error naming it,
// since positions must stay those of the published file.
func ImportSpiderVariant(ctx context.Context, o VariantOptions) (*Imported, error) {
	questionField := "question"
	switch o.Variant {
	case SpiderDK, SpiderRealistic:
	case SpiderSyn:
		questionField = "SpiderSynQuestion"
	default:
		return nil, fmt.Errorf("import: unknown Spider variant %q (known: %s)", o.Variant, variantList())
	}
	if o.Name == "" {
		o.Name = string(o.Variant)
	}
	var dev []struct {
		DBID              string `json:"db_id"`
		Query             string `json:"query"`
		Question          string `json:"question"`
		SpiderSynQuestion string `json:"SpiderSynQuestion"`
	}
	if err := readJSON(o.Dev, &dev); err != nil {
		return nil, err
	}
	rows := make([]row, len(dev))
	for i, q := range dev {
		question := q.Question
		if o.Variant == SpiderSyn {
			question = q.SpiderSynQuestion
		}
		if q.DBID == "" || q.Query == "" || question == "" {
			return nil, fmt.Errorf("import %s: %s item %d has no db_id, %s or query", o.Variant, o.Dev, i, questionField)
		}
		rows[i] = row{dbID: q.DBID, question: question, sql: q.Query}
	}
	sources := map[string]string{"dev": o.Dev}
	if o.Tables != "" {
		if err := checkTables(o.Tables, rows); err != nil {
			return nil, err
		}
		sources["tables"] = o.Tables
	}
	return build(ctx, o.Name, string(o.Variant), o.DBRoot, rows, sources)
}

func variantList() string {
	names := make([]string, len(SpiderVariants))
	for i, v := range SpiderVariants {
		names[i] = string(v)
	}
	return strings.Join(names, ", ")
}
