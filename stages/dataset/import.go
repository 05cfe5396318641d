package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
)

// ManifestFormat names the layout of manifest.json in an imported dataset.
const ManifestFormat = "rlgate.dataset-import/v1"

// File names in an imported dataset directory.
const (
	TasksFile    = "tasks.jsonl"
	GoldFile     = "gold.jsonl"
	ManifestFile = "manifest.json"
)

// Manifest describes an imported dataset: where it came from, the digests
// of its public and gold files (kept apart), and what was skipped.
type Manifest struct {
	Format    string                   `json:"format"`
	Dataset   string                   `json:"dataset"`
	Kind      string                   `json:"kind"`   // spider, bird, skyrl, or a Spider variant (spider-dk, ...)
	Source    map[string]ledger.Digest `json:"source"` // input file -> digest
	DBRoot    string                   `json:"db_root"`
	Databases map[string]ledger.Digest `json:"databases"` // db_id -> digest of its .sqlite
	Tasks     FileRef                  `json:"tasks"`
	Gold      FileRef                  `json:"gold"`
	Skipped   []Skipped                `json:"skipped"`
	// SpiderSchemas is the SpiderSchemasFile of a Spider-format import.
	SpiderSchemas *FileRef `json:"spider_schemas,omitempty"`
}

// FileRef names one written file by digest.
type FileRef struct {
	Path   string        `json:"path"`
	Digest ledger.Digest `json:"digest"`
	Count  int           `json:"count"`
}

// Skipped is a source question that was not imported, and why.
type Skipped struct {
	Index  int    `json:"index"`
	DBID   string `json:"db_id"`
	Reason string `json:"reason"`
}

// Imported is a dataset read from its source format, ready to write.
type Imported struct {
	Tasks    []tasks.Task
	Gold     []gold.Gold
	Manifest Manifest
	// SpiderSchemas are the databases' schemas and foreign keys, by db_id,
	// of a Spider-format import (SpiderSchemasFile).
	SpiderSchemas map[string]SpiderSchema
}

// row is one source question in any format.
type row struct {
	dbID, question, evidence, sql, difficulty string
}

// check refuses a field that is not clean text: a NUL (a JSON "\u0000"
// escape, or a parquet string) or invalid UTF-8 (parquet strings are not
// checked by the reader).
func (r row) check() error {
	for _, f := range []struct{ name, v string }{{"db_id", r.dbID}, {"question", r.question}, {"evidence", r.evidence}, {"sql", r.sql}, {"difficulty", r.difficulty}} {
		if err := jsonl.CheckText([]byte(f.v)); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

// DBPath is where a database lives under a root: {root}/{db_id}/{db_id}.sqlite.
func DBPath(root, dbID string) string {
	return filepath.Join(root, filepath.FromSlash(DBRel(dbID)))
}

// DBRel is where a database lives relative to its root, as a slash path.
func DBRel(dbID string) string { return dbID + "/" + dbID + ".sqlite" }

// build turns source rows into tasks and gold, rendering each database's
// schema once and skipping (and reporting) questions whose database is
// missing.
func build(ctx context.Context, name, kind, dbRoot string, rows []row, sources map[string]string) (*Imported, error) {
	// Recorded absolute: grading later runs from anywhere (--db-root
	// overrides it when the databases move).
	dbRoot, err := filepath.Abs(dbRoot)
	if err != nil {
		return nil, err
	}
	// The name is the prefix of every task id it gives (<name>-<index>).
	if err := tasks.CheckID(name); err != nil {
		return nil, fmt.Errorf("import: dataset name: %w. Try: --name without it", err)
	}
	im := &Imported{Manifest: Manifest{Format: ManifestFormat, Dataset: name, Kind: kind, DBRoot: dbRoot,
		Source: map[string]ledger.Digest{}, Databases: map[string]ledger.Digest{}, Skipped: []Skipped{}}}
	for label, path := range sources {
		d, _, err := manifests.HashFile(ctx, path)
		if err != nil {
			return nil, err
		}
		im.Manifest.Source[label] = d
	}
	ex := sqlenv.NewExecutor(sqlenv.Options{})
	defer ex.Close()
	// Spider-format gold has no difficulty of its own: its hardness is
	// computed from the gold SQL as the official evaluator computes it.
	hardness := kind == "spider" || strings.HasPrefix(kind, "spider-")
	if hardness {
		im.SpiderSchemas = map[string]SpiderSchema{}
	}
	schemas := map[string]string{}
	missing := map[string]string{}
	for i, r := range rows {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("import %s: source item %d: %w", name, i, err)
		}
	}
	for i, r := range rows {
		if why, ok := missing[r.dbID]; ok {
			im.Manifest.Skipped = append(im.Manifest.Skipped, Skipped{Index: i, DBID: r.dbID, Reason: why})
			continue
		}
		schema, ok := schemas[r.dbID]
		if !ok {
			path := DBPath(dbRoot, r.dbID)
			d, _, err := manifests.HashFile(ctx, path)
			if err != nil {
				missing[r.dbID] = "database missing: " + path
				im.Manifest.Skipped = append(im.Manifest.Skipped, Skipped{Index: i, DBID: r.dbID, Reason: missing[r.dbID]})
				continue
			}
			if schema, err = RenderSchema(ctx, ex, path); err != nil {
				return nil, err
			}
			schemas[r.dbID], im.Manifest.Databases[r.dbID] = schema, d
			if hardness {
				var sc SpiderSchema
				if sc.Schema, sc.Keys, err = ParseSchemaKeys(ctx, ex, path); err != nil {
					return nil, err
				}
				im.SpiderSchemas[r.dbID] = sc
			}
		}
		difficulty := r.difficulty
		if hardness {
			difficulty = goldHardness(im.SpiderSchemas[r.dbID].Schema, r.sql)
		}
		id := fmt.Sprintf("%s-%04d", name, i)
		im.Tasks = append(im.Tasks, tasks.Task{ID: id, Index: i, Dataset: name, DBID: r.dbID, Question: r.question, Evidence: r.evidence, Schema: schema})
		im.Gold = append(im.Gold, gold.Gold{ID: id, Index: i, DBID: r.dbID, SQL: r.sql, Difficulty: difficulty})
	}
	if len(im.Tasks) == 0 {
		return nil, fmt.Errorf("import %s: no question has its database under %s. Try: --db-root pointing at the directory holding <db_id>/<db_id>.sqlite", name, dbRoot)
	}
	return im, nil
}

// ErrOutNotEmpty is returned when an import would write into a directory
// that already holds something, such as an earlier import.
var ErrOutNotEmpty = errors.New("output directory is not empty")

// CheckOut refuses an output directory that exists and holds anything,
// unless force: an import must not silently replace another (a Spider
// import by BIRD). With force it may, and WriteDir then replaces only the
// files an import writes.
func CheckOut(dir string, force bool) error {
	if force {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("import into %s: %w", dir, err)
	case len(entries) > 0:
		return &ledger.Error{Op: "import into", Path: dir, Err: ErrOutNotEmpty,
			Hint: fmt.Sprintf("an empty or new --out, or --force to replace %s, %s, %s and %s there (nothing else is touched)", TasksFile, GoldFile, ManifestFile, SpiderSchemasFile)}
	}
	return nil
}

// WriteDir writes tasks.jsonl, gold.jsonl, a Spider-format import's
// spider_schemas.json and manifest.json into dir, which must be new or
// empty unless force (CheckOut); other files in dir are never touched,
// but for an earlier import's spider_schemas.json, which an import
// without one removes once its manifest is written. Each file is written
// to a temporary name and renamed, so a failed import never leaves a
// half-written file under the final name.
func (im *Imported) WriteDir(dir string, force bool) error {
	if err := CheckOut(dir, force); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write dataset: %w", err)
	}
	var err error
	if im.Manifest.Tasks, err = writeAtomic(dir, TasksFile, len(im.Tasks), func(w io.Writer) error { return tasks.Write(w, im.Tasks) }); err != nil {
		return err
	}
	if im.Manifest.Gold, err = writeAtomic(dir, GoldFile, len(im.Gold), func(w io.Writer) error { return gold.Write(w, im.Gold) }); err != nil {
		return err
	}
	if len(im.SpiderSchemas) > 0 {
		if im.Manifest.SpiderSchemas, err = writeSpiderSchemas(dir, im.SpiderSchemas); err != nil {
			return err
		}
	}
	sort.Slice(im.Manifest.Skipped, func(i, j int) bool { return im.Manifest.Skipped[i].Index < im.Manifest.Skipped[j].Index })
	body, err := ledger.CanonicalJSON(im.Manifest)
	if err != nil {
		return err
	}
	if _, err = writeAtomic(dir, ManifestFile, 0, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return err
	}
	if im.Manifest.SpiderSchemas == nil {
		if err := os.Remove(filepath.Join(dir, SpiderSchemasFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write dataset: %w", err)
		}
	}
	return nil
}

func writeAtomic(dir, name string, count int, write func(io.Writer) error) (FileRef, error) {
	final := filepath.Join(dir, name)
	if err := jsonl.WriteFile(final, write); err != nil {
		return FileRef{}, err
	}
	d, _, err := manifests.HashFile(context.Background(), final) // the file just written, small; WriteDir is not cancelable
	return FileRef{Path: name, Digest: d, Count: count}, err
}

// ReadManifest reads the manifest.json of an imported dataset directory.
func ReadManifest(dir string) (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("read dataset %s: %w. Try: rlgate data import ... --out %s", dir, err, dir)
	}
	var m Manifest
	if err := jsonUnmarshalStrict(raw, &m); err != nil {
		return nil, fmt.Errorf("read dataset %s/%s: %w", dir, ManifestFile, err)
	}
	return &m, nil
}
