package publish

import (
	"bytes"
	"embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
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

// omsSchemas compiles the bundle and statement schemas once, by $id; the
// files refer to each other by $id, so all four are added first.
var omsSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	for _, name := range []string{"bundle", "envelope", "statement", "predicate"} {
		raw, err := schemaFS.ReadFile("schemas/" + name + ".schema.json")
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("oms schema %s: %w", name, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("oms schema %s: %w", name, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, id := range []string{bundleSchemaID, statementSchemaID} {
		s, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("oms schema %s: %w", id, err)
		}
		out[id] = s
	}
	return out, nil
})

// validateJSON checks doc against the OMS schema with the given $id.
func validateJSON(id string, doc []byte) error {
	ss, err := omsSchemas()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
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
