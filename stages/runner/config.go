package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stages/metrics"
	"go.yaml.in/yaml/v3"
)

// canonicalConfig returns the parsed tree of a YAML or JSON config, for
// its canonical JSON, so two configs that differ only in layout, key order
// or number spelling (1e-6 vs 0.000001) hash alike. Other files have no
// canonical form (nil, false).
func canonicalConfig(path string, raw []byte) (any, bool, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		var v any
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&v); err != nil {
			return nil, false, fmt.Errorf("config %s: %w", path, err)
		}
		// Only the first document is read: a second one would be stored
		// unread, its secrets unseen.
		var more any
		if err := dec.Decode(&more); err == nil && more != nil {
			return nil, false, fmt.Errorf("config %s: holds a second YAML document. Try: one document per --config file", path)
		}
		return metrics.StringKeys(v), true, nil
	case ".json":
		canon, err := ledger.Canonicalize(raw)
		if err != nil {
			return nil, false, fmt.Errorf("config %s: %w", path, err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(canon))
		dec.UseNumber() // numbers as written: canonical JSON keeps them
		if err := dec.Decode(&v); err != nil {
			return nil, false, fmt.Errorf("config %s: %w", path, err)
		}
		return v, true, nil
	}
	return nil, false, nil
}

// storedConfig is a config as a run stores it: its bytes and canonical
// JSON (nil for a file that has neither YAML nor JSON form) with every
// secret redacted, the digest of the file as read when redaction changed
// it, and the secrets removed (to mask in the stage's output).
type storedConfig struct {
	raw, canon []byte
	original   *ledger.Digest
	red        ledger.Redactor
}

// loadConfig reads and redacts a config. In a YAML or JSON tree, the value
// of a secret-named key (wandb_api_key, openai.api_key, password) becomes
// ledger.Redacted, whatever it holds, and every other string goes through
// the value rule (headers: ["Authorization: Bearer ..."]). The stored
// bytes are the file with those secrets replaced where they stand when
// that reads back as the redacted tree, so layout and comments survive;
// otherwise (a secret written with escapes, or too short to replace
// safely) the canonical JSON, which YAML reads too. Other files get the
// value rule as text.
func loadConfig(path string) (*storedConfig, error) {
	raw, err := untrusted.ReadFile(path, untrusted.ConfigLimit)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	tree, ok, err := canonicalConfig(path, raw)
	if err != nil {
		return nil, err
	}
	c := &storedConfig{raw: raw}
	if ok {
		tree = redactTree(&c.red, "", tree)
		if c.canon, err = ledger.CanonicalJSON(tree); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	masked := c.red.Masker().All(raw)
	if ok && !bytes.Equal(masked, raw) {
		if tree != nil && strings.HasSuffix(strings.ToLower(path), "ml") {
			masked = yamlPlainRedacted().ReplaceAll(masked, []byte(`${1}"`+ledger.Redacted+`"`))
		}
		back, _, err := canonicalConfig(path, masked)
		var canon []byte
		if err == nil {
			canon, err = ledger.CanonicalJSON(back)
		}
		if err != nil || !bytes.Equal(canon, c.canon) {
			masked = c.canon
		}
	}
	if !bytes.Equal(masked, raw) {
		d := ledger.Sum(raw)
		c.raw, c.original = masked, &d
	}
	return c, nil
}

// yamlPlainRedacted finds ledger.Redacted where it replaced a whole plain
// YAML scalar (key: SECRET, - SECRET), which YAML would read as a list:
// it is quoted there.
var yamlPlainRedacted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)((?:^\s*-|[:,\[{])[ \t]*)` + regexp.QuoteMeta(ledger.Redacted))
})

// redactTree applies the redaction rule to a config tree, noting in r the
// fields changed by their path ("openai.api_key", "headers[0]").
func redactTree(r *ledger.Redactor, field string, v any) any {
	join := func(k string) string {
		if field == "" {
			return k
		}
		return field + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, isBool := e.(bool); ledger.SecretName(k) && e != nil && e != "" && !isBool { // use_auth_token: true is a setting
				noteLeaves(r, join(k), k, e)
				x[k] = ledger.Redacted
				continue
			}
			x[k] = redactTree(r, join(k), e)
		}
	case []any:
		for i, e := range x {
			x[i] = redactTree(r, fmt.Sprintf("%s[%d]", field, i), e)
		}
	case string:
		return r.Value(field, "", x)
	}
	return v
}

// noteLeaves notes every scalar under a secret-named key as a secret.
func noteLeaves(r *ledger.Redactor, field, name string, v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			noteLeaves(r, field, name, e)
		}
	case []any:
		for _, e := range x {
			noteLeaves(r, field, name, e)
		}
	case nil:
	default:
		r.Value(field, name, fmt.Sprint(x))
	}
}

// ConfigDigest is the digest repro compares for a config file, as a run
// stores it: of its canonical form for YAML and JSON, of its bytes
// otherwise, secrets redacted in both (so a changed secret alone does not
// make a stage out of date).
func ConfigDigest(path string) (ledger.Digest, error) {
	c, err := loadConfig(path)
	if err != nil {
		return ledger.Digest{}, err
	}
	if c.canon != nil {
		return ledger.Sum(c.canon), nil
	}
	return ledger.Sum(c.raw), nil
}

// ConfigKey names a config file in a run.start entry: its path relative
// to the stage's working directory when it lies inside it, so the same
// pipeline reached by another path (repro -f a/rlgate.yaml vs cd a) keys
// its configs alike; otherwise its absolute path.
func ConfigKey(dir, path string) string {
	absDir, err1 := filepath.Abs(dir)
	abs, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if rel, err := filepath.Rel(absDir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return abs
}

// configArtifact stores a config's bytes and canonical form as blobs,
// redacted (loadConfig); the secrets removed join red, so that the stage's
// output is masked of them too.
func configArtifact(l *ledger.Ledger, path string, red *ledger.Redactor) (ArtifactBody, []ledger.Digest, error) {
	c, err := loadConfig(path)
	if err != nil {
		return ArtifactBody{}, nil, err
	}
	red.Absorb(&c.red)
	rawBlob, err := l.PutBlobBytes(c.raw)
	if err != nil {
		return ArtifactBody{}, nil, err
	}
	a := ArtifactBody{Artifact: ledger.Artifact{Role: records.RoleConfig, Name: path, Kind: records.ArtifactConfig, Digest: rawBlob}, Path: path,
		Original: c.original, Redacted: c.red.Fields()}
	blobs := []ledger.Digest{rawBlob}
	if c.canon != nil {
		d, err := l.PutBlobBytes(c.canon)
		if err != nil {
			return ArtifactBody{}, nil, err
		}
		a.Canonical = &d
		blobs = append(blobs, d)
	}
	return a, blobs, nil
}

// canonicalDigest is what makes two configs "the same" for repro.
func (a ArtifactBody) canonicalDigest() ledger.Digest {
	if a.Canonical != nil {
		return *a.Canonical
	}
	return a.Digest
}
