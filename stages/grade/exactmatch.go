package grade

import (
	"context"
	"errors"
	"sync"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/spidersql"
)

// emSchema is what exact match needs of a database: its tables and
// columns, and its foreign-key map, read once per database (once: the
// workers that meet a database at the same time wait for one read), and
// the queries prepared on it so far, by text: Spider dev asks 1034
// questions of 563 distinct gold queries, and a grader grades every
// --predictions file of a command against the same golds.
type emSchema struct {
	once   sync.Once
	schema spidersql.Schema
	kmap   spidersql.KeyMap
	err    error

	mu      sync.Mutex
	queries map[queryKey]preparedQuery
}

// queryKey names a query met on a database: a gold and a prediction of
// the same text are prepared differently.
type queryKey struct {
	gold bool
	sql  string
}

// preparedQuery is a query prepared for exact match, with why it did not
// parse.
type preparedQuery struct {
	q   *spidersql.Prepared
	err error
}

// prepared returns the gold or prediction sql prepared, from what s
// remembers when it was prepared before. Two workers meeting a new query
// at once may both prepare it, to the same result.
func (s *emSchema) prepared(gold bool, sql string) (*spidersql.Prepared, error) {
	key := queryKey{gold, sql}
	s.mu.Lock()
	p, ok := s.queries[key]
	s.mu.Unlock()
	if ok {
		return p.q, p.err
	}
	if gold {
		p.q, p.err = spidersql.PrepareGold(s.schema, s.kmap, sql)
	} else {
		p.q, p.err = spidersql.PreparePrediction(s.schema, s.kmap, sql)
	}
	s.mu.Lock()
	if s.queries == nil {
		s.queries = map[queryKey]preparedQuery{}
	}
	s.queries[key] = p
	s.mu.Unlock()
	return p.q, p.err
}

// exactMatch grades predSQL against goldSQL by the official exact set
// match on the database at dbPath's schema. The error reports only a
// database whose schema cannot be read.
func (g *Grader) exactMatch(ctx context.Context, dbPath, predSQL, goldSQL string) (Judgement, error) {
	s, err := g.emSchema(ctx, dbPath)
	if err != nil {
		return Judgement{}, err
	}
	o := Judgement{Metric: MetricSpiderEM}
	gold, goldErr := s.prepared(true, goldSQL)
	var pred *spidersql.Prepared
	var predErr error
	if goldErr == nil {
		pred, predErr = s.prepared(false, predSQL)
	}
	switch {
	case goldErr != nil:
		o.Verdict, o.Detail = VerdictGoldDefect, "gold: the official parser cannot parse it: "+goldErr.Error()
	case predSQL == "":
		o.Verdict, o.Detail = VerdictPredError, ErrNoPrediction.Error()
	case predErr != nil:
		o.Verdict, o.Detail = VerdictPredError, unparsedPrefix+predErr.Error()
	case spidersql.Match(pred, gold):
		o.Verdict, o.Correct = VerdictCorrect, true
	default:
		o.Verdict, o.Detail = VerdictWrong, "not an exact set match"
	}
	return o, nil
}

// readEMSchemas reads the schemas of the databases golds use, a database
// to a worker, before their tasks are graded. Tasks come grouped by
// database, so workers grading them in order all met a database's first
// tasks together and all but one waited, a core idle, while its schema
// was read. A schema that cannot be read is reported by the grading of
// its first task, as before.
func (g *Grader) readEMSchemas(ctx context.Context, dbRoot string, golds []gold.Gold) {
	var paths []string
	seen := map[string]bool{}
	for _, gd := range golds {
		if p := dataset.DBPath(dbRoot, gd.DBID); !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	_ = ledger.ForEach(ctx, len(paths), func(ctx context.Context, i int) error {
		_, _ = g.emSchema(ctx, paths[i])
		return nil
	})
}

// unparsedPrefix starts the detail of a prediction the official parser
// rejects; the summary counts such items (Summary.Unparsed).
const unparsedPrefix = "unparsable (scored 0, as the official parser rejects it): "

func (g *Grader) emSchema(ctx context.Context, dbPath string) (*emSchema, error) {
	g.mu.Lock()
	s, ok := g.emSchemas[dbPath]
	if !ok {
		s = &emSchema{}
		g.emSchemas[dbPath] = s
	}
	g.mu.Unlock()
	s.once.Do(func() {
		if s.schema, s.kmap, s.err = dataset.ParseSchemaKeys(ctx, g.exec, dbPath); s.err == nil {
			s.err = noTables(dbPath, s.schema)
		}
	})
	return s, s.err
}

// noTables refuses the schema of a database without tables, on which no
// query can match.
func noTables(dbPath string, schema spidersql.Schema) error {
	if len(schema) == 0 {
		return errors.New("exact match: " + dbPath + " has no tables")
	}
	return nil
}

// useSpiderSchemas gives exact match the schemas the import in dir
// recorded (dataset.SpiderSchemasFile) of each database check found
// unchanged since the import, so that grading opens none of them: the
// same bytes give the same schema. The others, and every database of an
// import that recorded none, are read from the database when first
// graded on, as the official evaluator reads them. It returns the file's
// digest when there is one, for the grading's run.start.
func (g *Grader) useSpiderSchemas(dir string, man *dataset.Manifest, check *DatabaseCheck) (*ledger.Digest, error) {
	schemas, err := dataset.ReadSpiderSchemas(dir, man)
	if err != nil || schemas == nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, sc := range schemas {
		if d, ok := check.Digests[id]; !ok || d != man.Databases[id] {
			continue
		}
		path := dataset.DBPath(check.Root, id)
		if _, ok := g.emSchemas[path]; ok {
			continue
		}
		s := &emSchema{}
		s.once.Do(func() { s.schema, s.kmap, s.err = sc.Schema, sc.Keys, noTables(path, sc.Schema) })
		g.emSchemas[path] = s
	}
	return &man.SpiderSchemas.Digest, nil
}
