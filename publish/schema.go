package publish

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFS holds the OMS v1.0 JSON Schemas (schemas/README.md says whence).
//
//go:embed schemas/*.schema.json
var schemaFS embed.FS

// The schemas' $ids, as the files declare them.
const (
	bundleSchemaID    = "https://model_signing/bundle/v1.0/schema"
	statementSchemaID = "https://model_signing/statement/v1.0/schema"
)

// omsSchemas resolves the bundle and statement schemas once. The files
// refer to each other by $id, so each is loaded by its $id, a fresh copy
// for each resolution. (github.com/google/jsonschema-go, which builds
// nothing at package init: the validator used before compiled every
// draft's meta-schemas in its init, ~10 ms of every rlgate command.)
var omsSchemas = sync.OnceValues(func() (map[string]*jsonschema.Resolved, error) {
	load := func(id string) (*jsonschema.Schema, error) {
		for _, name := range []string{"bundle", "envelope", "statement", "predicate"} {
			raw, err := schemaFS.ReadFile("schemas/" + name + ".schema.json")
			if err != nil {
				return nil, err
			}
			s := new(jsonschema.Schema)
			if err := json.Unmarshal(raw, s); err != nil {
				return nil, fmt.Errorf("oms schema %s: %w", name, err)
			}
			if s.ID == id {
				return s, nil
			}
		}
		return nil, fmt.Errorf("oms schema %s: not among the embedded schemas", id)
	}
	loader := func(u *url.URL) (*jsonschema.Schema, error) { return load(u.String()) }
	out := map[string]*jsonschema.Resolved{}
	for _, id := range []string{bundleSchemaID, statementSchemaID} {
		s, err := load(id)
		if err != nil {
			return nil, err
		}
		if out[id], err = s.Resolve(&jsonschema.ResolveOptions{Loader: loader}); err != nil {
			return nil, fmt.Errorf("oms schema %s: %w", id, err)
		}
	}
	return out, nil
})

// validateJSON checks doc against the OMS schema with the given $id.
func validateJSON(id string, doc []byte) error {
	ss, err := omsSchemas()
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return ss[id].Validate(v)
}

// validateOMS checks a bundle against the OMS bundle schema and its DSSE
// payload against the OMS statement schema.
func validateOMS(bundle, payload []byte) error {
	if err := validateJSON(bundleSchemaID, bundle); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if err := validateJSON(statementSchemaID, payload); err != nil {
		return fmt.Errorf("statement: %w", err)
	}
	return nil
}
