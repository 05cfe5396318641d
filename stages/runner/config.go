package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
	"go.yaml.in/yaml/v3"
)

// canonicalConfig returns the canonical JSON of a YAML or JSON config, so
// two configs that differ only in layout, key order or number spelling
// (1e-6 vs 0.000001) hash alike. Other files have no canonical form (nil).
func canonicalConfig(path string, raw []byte) ([]byte, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		var v any
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		return ledger.CanonicalJSON(metrics.StringKeys(v))
	case ".json":
		canon, err := ledger.Canonicalize(raw)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		return canon, nil
	}
	return nil, nil
}

// ConfigDigest is the digest repro compares for a config file: of its
// canonical form for YAML and JSON, of its bytes otherwise.
func ConfigDigest(path string) (ledger.Digest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ledger.Digest{}, fmt.Errorf("config: %w", err)
	}
	canon, err := canonicalConfig(path, raw)
	if err != nil {
		return ledger.Digest{}, err
	}
	if canon != nil {
		return ledger.Sum(canon), nil
	}
	return ledger.Sum(raw), nil
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

// configArtifact stores a config's raw bytes and canonical form as blobs.
func configArtifact(l *ledger.Ledger, path string) (artifactBody, []ledger.Digest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return artifactBody{}, nil, fmt.Errorf("config: %w", err)
	}
	canon, err := canonicalConfig(path, raw)
	if err != nil {
		return artifactBody{}, nil, err
	}
	rawBlob, err := l.PutBlobBytes(raw)
	if err != nil {
		return artifactBody{}, nil, err
	}
	a := artifactBody{Artifact: ledger.Artifact{Role: "config", Name: path, Kind: "config", Digest: rawBlob}, Path: path}
	blobs := []ledger.Digest{rawBlob}
	if canon != nil {
		c, err := l.PutBlobBytes(canon)
		if err != nil {
			return artifactBody{}, nil, err
		}
		a.Canonical = &c
		blobs = append(blobs, c)
	}
	return a, blobs, nil
}

// canonicalDigest is what makes two configs "the same" for repro.
func (a artifactBody) canonicalDigest() ledger.Digest {
	if a.Canonical != nil {
		return *a.Canonical
	}
	return a.Digest
}
