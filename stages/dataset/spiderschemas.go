package dataset

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stages/spidersql"
)

// SpiderSchemasFile holds, for a Spider-format import, what the official
// Spider evaluator reads of each database: its tables and columns
// (get_schema) and its foreign-key map. The import reads them anyway (the
// gold's hardness needs the schema); recording them lets exact match
// grade without opening a database whose bytes the grading has checked
// against the import's digest, which was most of its time.
const SpiderSchemasFile = "spider_schemas.json"

// SpiderSchema is one database's entry in SpiderSchemasFile.
type SpiderSchema struct {
	Schema spidersql.Schema `json:"schema"`
	Keys   spidersql.KeyMap `json:"foreign_keys"`
}

// ErrSpiderSchemasChanged is returned when a dataset's SpiderSchemasFile
// is not the file its import wrote.
var ErrSpiderSchemasChanged = errors.New("spider schemas file differs from the imported one")

// ReadSpiderSchemas reads the SpiderSchemasFile of the import in dir
// whose manifest is man, keyed by db_id, or nil when the import recorded
// none (a BIRD or SkyRL import, or one made before rlgate wrote them).
// The file is refused unless its bytes are those man names, so an edited
// schema cannot change a verdict quietly; the name is always
// SpiderSchemasFile, whatever the manifest's path says.
func ReadSpiderSchemas(dir string, man *Manifest) (map[string]SpiderSchema, error) {
	ref := man.SpiderSchemas
	if ref == nil {
		return nil, nil
	}
	path := filepath.Join(dir, SpiderSchemasFile)
	raw, err := untrusted.ReadFile(path, untrusted.SpiderSchemasLimit)
	if err != nil {
		return nil, fmt.Errorf("read spider schemas: %w", err)
	}
	if d := ledger.Sum(raw); d != ref.Digest {
		return nil, &ledger.Error{Op: "read spider schemas", Path: path, Err: fmt.Errorf("%w: digest %s, but the import recorded %s", ErrSpiderSchemasChanged, d, ref.Digest),
			Hint: "rlgate data import --force into " + dir + " to write it again"}
	}
	var out map[string]SpiderSchema
	if err := jsonUnmarshalStrict(raw, &out); err != nil {
		return nil, fmt.Errorf("read spider schemas %s: %w", path, err)
	}
	if len(out) != ref.Count {
		return nil, fmt.Errorf("read spider schemas %s: %d databases, but the import recorded %d", path, len(out), ref.Count)
	}
	return out, nil
}

// writeSpiderSchemas writes schemas into dir as canonical JSON and returns
// the file's reference for the manifest.
func writeSpiderSchemas(dir string, schemas map[string]SpiderSchema) (*FileRef, error) {
	body, err := ledger.CanonicalJSON(schemas)
	if err != nil {
		return nil, err
	}
	ref, err := writeAtomic(dir, SpiderSchemasFile, len(schemas), func(w io.Writer) error { _, err := w.Write(body); return err })
	return &ref, err
}
