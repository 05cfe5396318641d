package manifests

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The vectors under testdata/reference were computed by an independent
// implementation of docs/FORMAT.md, so these tests pin checkpoint and tree
// digests to the document rather than to this package's own output.

func readReference(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reference", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// refTensor is a tensor as the reference lists it; digests are bare hex.
type refTensor struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Digest string  `json:"digest"`
}

func TestCheckpointDigestsMatchIndependentImplementation(t *testing.T) {
	var file struct {
		Cases []struct {
			Name string `json:"name"`
			// A shipped file (File), or files written from their bytes.
			File         string `json:"file"`
			HeaderDigest string `json:"header_digest"`
			FileDigest   string `json:"file_digest"`
			Files        []struct {
				Path         string `json:"path"`
				Kind         string `json:"kind"`
				Digest       string `json:"digest"`
				HeaderDigest string `json:"header_digest"`
				Content      string `json:"content_hex"`
			} `json:"files"`
			Identity string      `json:"model_identity"`
			Tensors  []refTensor `json:"tensors"`
		} `json:"cases"`
	}
	readReference(t, "checkpoint-vectors.json", &file)
	if len(file.Cases) != 13 {
		t.Fatalf("read %d cases, want 13", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "safetensors", strings.TrimPrefix(c.File, "../safetensors/"))
			type refFile struct{ Path, Kind, Digest, HeaderDigest string }
			var wantFiles []refFile
			if c.File == "" {
				path = t.TempDir()
				for _, f := range c.Files {
					b, err := hex.DecodeString(f.Content)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(path, f.Path), b, 0o644); err != nil {
						t.Fatal(err)
					}
					kind := f.Kind
					if kind == "file" {
						kind = FileKindPlain
					}
					wantFiles = append(wantFiles, refFile{f.Path, kind, f.Digest, f.HeaderDigest})
				}
				if len(c.Files) == 1 {
					path = filepath.Join(path, c.Files[0].Path)
				}
			} else {
				wantFiles = []refFile{{filepath.Base(path), FileKindSafetensors, c.FileDigest, c.HeaderDigest}}
			}
			m, err := BuildCheckpointManifest(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Identity.Hex() != c.Identity {
				t.Errorf("model identity %s, the independent implementation says %s", m.Identity.Hex(), c.Identity)
			}
			var gotTensors []refTensor
			for _, ts := range m.Tensors {
				gotTensors = append(gotTensors, refTensor{ts.Name, string(ts.DType), ts.Shape, ts.Digest.Hex()})
			}
			wantTensors := make([]refTensor, len(c.Tensors))
			for i, ts := range c.Tensors {
				wantTensors[i] = refTensor{ts.Name, ts.DType, ts.Shape, ts.Digest}
			}
			byName := cmpopts.SortSlices(func(a, b refTensor) bool { return a.Name < b.Name })
			if diff := cmp.Diff(wantTensors, gotTensors, byName); diff != "" {
				t.Errorf("tensors differ (-reference +ours):\n%s", diff)
			}
			var gotFiles []refFile
			for _, f := range m.Files {
				hd := ""
				if f.HeaderDigest != nil {
					hd = f.HeaderDigest.Hex()
				}
				gotFiles = append(gotFiles, refFile{f.Path, f.Kind, f.Digest.Hex(), hd})
			}
			if len(c.Files) == 1 {
				wantFiles[0].Path = filepath.Base(path)
			}
			byPath := cmpopts.SortSlices(func(a, b refFile) bool { return a.Path < b.Path })
			if diff := cmp.Diff(wantFiles, gotFiles, byPath); diff != "" {
				t.Errorf("files differ (-reference +ours):\n%s", diff)
			}
		})
	}
}

// writeRefTree creates a tree spec of the reference under path.
func writeRefTree(t *testing.T, path string, node map[string]any) {
	t.Helper()
	switch node["type"] {
	case "file":
		b, err := hex.DecodeString(node["content_hex"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	case "link":
		if err := os.Symlink(node["target"].(string), path); err != nil {
			t.Fatal(err)
		}
	case "dir":
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, child := range node["children"].(map[string]any) {
			writeRefTree(t, filepath.Join(path, name), child.(map[string]any))
		}
	default:
		t.Fatalf("unknown node type %v", node["type"])
	}
}

func TestTreeDigestsMatchIndependentImplementation(t *testing.T) {
	var file struct {
		Cases []struct {
			Name   string         `json:"name"`
			Tree   map[string]any `json:"tree"`
			Digest string         `json:"digest"`
			Nodes  []struct {
				Path   string `json:"path"`
				Type   string `json:"type"`
				Digest string `json:"digest"`
			} `json:"nodes"`
		} `json:"cases"`
	}
	readReference(t, "tree-digest-vectors.json", &file)
	if len(file.Cases) != 10 {
		t.Fatalf("read %d cases, want 10", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			root := filepath.Join("..", "testdata", "safetensors")
			if c.Tree != nil {
				root = filepath.Join(t.TempDir(), "root")
				writeRefTree(t, root, c.Tree)
			}
			m, err := HashTree(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			if m.Digest.Hex() != c.Digest {
				t.Errorf("root digest %s, the independent implementation says %s", m.Digest.Hex(), c.Digest)
			}
			if c.Nodes == nil {
				return
			}
			type node struct{ Path, Type, Digest string }
			var want, got []node
			for _, n := range c.Nodes {
				want = append(want, node{n.Path, n.Type, n.Digest})
			}
			for _, n := range m.Nodes {
				got = append(got, node{n.Path, n.Type, n.Digest.Hex()})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("nodes differ, order included (-reference +ours):\n%s", diff)
			}
		})
	}
}
