package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
)

// IndexFile is the name under which a sharded checkpoint lists, in its
// weight_map, the shard that holds each tensor.
const IndexFile = "model.safetensors.index.json"

// readIndex reads the weight_map of the index at file (name labels errors)
// and returns it with shard paths cleaned to slash form. A key repeated in
// weight_map is an error, and so is a shard path that would leave the
// checkpoint directory.
func readIndex(file, name string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint index: %w", err)
	}
	p := strictJSON{file: name}
	dec := json.NewDecoder(bytes.NewReader(b))
	var wm map[string]string
	err = p.object(dec, "", "index", func(key string) error {
		if key != "weight_map" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return p.fail("", ErrBadHeader, "%s: %v", key, err)
			}
			return nil
		}
		m, err := p.stringMap(dec, "", "weight_map")
		wm = m
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, p.fail("", ErrBadHeader, "data after the index object")
	}
	if wm == nil {
		return nil, p.fail("", ErrBadIndex, "weight_map missing")
	}
	for tensor, shard := range wm {
		if !filepath.IsLocal(shard) {
			return nil, p.fail(tensor, ErrBadIndex, "shard path %q leaves the checkpoint directory", shard)
		}
		wm[tensor] = path.Clean(filepath.ToSlash(shard))
	}
	return wm, nil
}

// WriteCheckpointIndex writes an index in the layout Hugging Face
// Transformers writes: metadata.total_size (the tensor bytes of all shards)
// and weight_map from tensor name to shard file.
func WriteCheckpointIndex(w io.Writer, weightMap map[string]string, totalSize int64) error {
	type metadata struct {
		TotalSize int64 `json:"total_size"`
	}
	b, err := json.MarshalIndent(struct {
		Metadata  metadata          `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}{metadata{totalSize}, weightMap}, "", "  ")
	if err != nil {
		return fmt.Errorf("write checkpoint index: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write checkpoint index: %w", err)
	}
	return nil
}
