package manifests

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// tensorSpec is a tensor of a test model, kept as bytes so it can be
// written into any layout.
type tensorSpec struct {
	name  string
	dtype DType
	shape []int64
	data  []byte
}

// testModel returns a small model with bf16, f8, f32 and scalar tensors.
func testModel() []tensorSpec {
	embed := make([]float32, 32)
	for i := range embed {
		embed[i] = float32(i)/8 - 2
	}
	head := make([]float32, 32)
	for i := range head {
		head[i] = float32(i*i) / 100
	}
	return []tensorSpec{
		{"model.embed.weight", "BF16", []int64{8, 4}, bf16Bytes(embed...)},
		{"model.layers.0.w", "F8_E4M3", []int64{16}, []byte{0x38, 0x40, 0x44, 0x48, 0xB8, 0xC0, 0x30, 0x28, 0x01, 0x02, 0x7E, 0xFE, 0x00, 0x80, 0x3C, 0x34}},
		{"model.layers.0.b", "F32", []int64{4}, f32Bytes(0.5, -0.25, 1e-3, 7)},
		{"lm_head.weight", "BF16", []int64{4, 8}, bf16Bytes(head...)},
		{"scale", "F8_E5M2", nil, []byte{0x3C}},
	}
}

// writeCheckpoint writes model into dir: one file per shard, each shard
// holding the named tensors, and, with index, model.safetensors.index.json.
// config.json is written beside them, as a trainer would.
func writeCheckpoint(t testing.TB, dir string, model []tensorSpec, shards map[string][]string, index bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	byName := map[string]tensorSpec{}
	for _, s := range model {
		byName[s.name] = s
	}
	weightMap := map[string]string{}
	var total int64
	for file, names := range shards {
		var srcs []TensorSource
		for _, n := range names {
			s := byName[n]
			srcs = append(srcs, src(s.name, s.dtype, s.shape, s.data))
			weightMap[n] = file
			total += int64(len(s.data))
		}
		writeTensors(t, filepath.Join(dir, file), map[string]string{"format": "pt"}, srcs...)
	}
	if index {
		writeIndex(t, filepath.Join(dir, IndexFile), weightMap, total)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"test"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeIndex(t testing.TB, path string, weightMap map[string]string, total int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpointIndex(f, weightMap, total); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func buildManifest(t testing.TB, path string) *CheckpointManifest {
	t.Helper()
	m, err := BuildCheckpointManifest(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReshardedIdentity writes the same weights three ways and checks that
// the identity stays while file digests change, and that every digest in
// each manifest follows from the bytes as documented.
func TestReshardedIdentity(t *testing.T) {
	model := testModel()
	root := t.TempDir()
	layouts := []struct {
		name   string
		shards map[string][]string
		index  bool
	}{
		{"single", map[string][]string{"model.safetensors": {"model.embed.weight", "model.layers.0.w", "model.layers.0.b", "lm_head.weight", "scale"}}, false},
		{"two shards", map[string][]string{
			"model-00001-of-00002.safetensors": {"model.embed.weight", "model.layers.0.w"},
			"model-00002-of-00002.safetensors": {"model.layers.0.b", "lm_head.weight", "scale"},
		}, true},
		{"three shards", map[string][]string{
			"model-00001-of-00003.safetensors": {"scale", "lm_head.weight"},
			"model-00002-of-00003.safetensors": {"model.layers.0.b"},
			"model-00003-of-00003.safetensors": {"model.layers.0.w", "model.embed.weight"},
		}, true},
	}
	var identity ledger.Digest
	fileDigests := map[ledger.Digest]string{}
	for i, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprint(i))
			writeCheckpoint(t, dir, model, l.shards, l.index)
			m := buildManifest(t, dir)
			checkManifest(t, dir, m, model)
			if i == 0 {
				identity = m.Identity
			} else if m.Identity != identity {
				t.Errorf("identity %v, want %v as for the single file", m.Identity, identity)
			}
			for _, f := range m.Files {
				if f.Kind != FileKindSafetensors {
					continue
				}
				if prev, ok := fileDigests[f.Digest]; ok {
					t.Errorf("%s has the digest of %s", f.Path, prev)
				}
				fileDigests[f.Digest] = f.Path
			}
		})
	}
	// The single file again, as a path rather than a directory.
	single := buildManifest(t, filepath.Join(root, "0", "model.safetensors"))
	if single.Identity != identity || len(single.Files) != 1 || single.Files[0].Path != "model.safetensors" {
		t.Errorf("single-file manifest %+v", single)
	}
}

// checkManifest recomputes every digest of m from the files in dir and the
// definitions of the format.
func checkManifest(t *testing.T, dir string, m *CheckpointManifest, model []tensorSpec) {
	t.Helper()
	if m.Version != CheckpointManifestVersion {
		t.Errorf("version %d", m.Version)
	}
	if len(m.Tensors) != len(model) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(model))
	}
	if !slices.IsSortedFunc(m.Tensors, func(a, b CheckpointTensor) int { return cmp.Compare(a.Name, b.Name) }) {
		t.Error("tensors not sorted by name")
	}
	for _, s := range model {
		i := slices.IndexFunc(m.Tensors, func(c CheckpointTensor) bool { return c.Name == s.name })
		if i < 0 {
			t.Fatalf("tensor %q missing", s.name)
		}
		c := m.Tensors[i]
		if c.DType != s.dtype || c.Size != int64(len(s.data)) || c.Digest != ledger.Sum(s.data) || len(c.Shape) != len(s.shape) {
			t.Errorf("tensor %+v does not match %+v", c, s)
		}
	}
	var total int64
	for _, f := range m.Files {
		raw, err := os.ReadFile(filepath.Join(dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		total += f.Size
		if f.Size != int64(len(raw)) {
			t.Errorf("%s: size %d, want %d", f.Path, f.Size, len(raw))
		}
		if f.Kind == FileKindPlain {
			if f.Digest != ledger.Sum(raw) || f.HeaderDigest != nil {
				t.Errorf("%s: digest %v, want the BLAKE3 of its bytes", f.Path, f.Digest)
			}
			continue
		}
		var ts []CheckpointTensor
		for _, c := range m.Tensors {
			if c.File == f.Path {
				ts = append(ts, c)
			}
		}
		slices.SortFunc(ts, func(a, b CheckpointTensor) int {
			return cmp.Or(cmp.Compare(a.DataOffsets[0], b.DataOffsets[0]), cmp.Compare(a.DataOffsets[1], b.DataOffsets[1]), cmp.Compare(a.Name, b.Name))
		})
		var digests []ledger.Digest
		dataStart := int64(len(raw)) - ts[len(ts)-1].DataOffsets[1]
		for _, c := range ts {
			digests = append(digests, c.Digest)
			if got := ledger.Sum(raw[dataStart+c.DataOffsets[0] : dataStart+c.DataOffsets[1]]); got != c.Digest {
				t.Errorf("%s: tensor %q digest %v, want %v", f.Path, c.Name, c.Digest, got)
			}
		}
		if hd := ledger.Sum(raw[:dataStart]); f.HeaderDigest == nil || *f.HeaderDigest != hd {
			t.Errorf("%s: header digest %v, want %v", f.Path, f.HeaderDigest, hd)
		}
		if want := SafetensorsFileDigest(*f.HeaderDigest, digests); f.Digest != want || f.Digest == ledger.Sum(raw) {
			t.Errorf("%s: file digest %v, want derived %v", f.Path, f.Digest, want)
		}
	}
	if total != m.Size {
		t.Errorf("size %d, files add up to %d", m.Size, total)
	}
}

// TestManifestJSON pins the JSON field names, which are a contract.
func TestManifestJSON(t *testing.T) {
	m := buildManifest(t, filepath.Join(samples, "overall.safetensors"))
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	var files, tensors []map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(json.Unmarshal(top["files"], &files), json.Unmarshal(top["tensors"], &tensors)); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		what string
		obj  map[string]json.RawMessage
		keys string
	}{
		{"manifest", top, "files model_identity size tensors version"},
		{"file", files[0], "digest header_digest kind path size"},
		{"tensor", tensors[0], "data_offsets digest dtype file name shape size"},
	}
	for _, w := range want {
		if got := strings.Join(slices.Sorted(maps.Keys(w.obj)), " "); got != w.keys {
			t.Errorf("%s keys %q, want %q", w.what, got, w.keys)
		}
	}
	var back CheckpointManifest
	if err := json.Unmarshal(b, &back); err != nil || back.Identity != m.Identity || *back.Files[0].HeaderDigest != *m.Files[0].HeaderDigest {
		t.Errorf("manifest does not survive JSON: %v", err)
	}
}

// TestBrokenCheckpoints covers sharding defects and unreadable trees; every
// error names the file and the tensor.
func TestBrokenCheckpoints(t *testing.T) {
	model := testModel()
	two := map[string][]string{
		"a.safetensors": {"model.embed.weight", "model.layers.0.w", "model.layers.0.b"},
		"b.safetensors": {"lm_head.weight", "scale"},
	}
	tests := []struct {
		name    string
		fixture string                    // committed under testdata/checkpoint, or
		setup   func(t *testing.T) string // returns the checkpoint path
		want    error
		message string
	}{
		{name: "missing shard", fixture: "missing-shard", want: ErrBadIndex,
			message: `safetensors model.safetensors.index.json: tensor "b": listed in weight_map, but shard "model-00002-of-00002.safetensors" is missing`},
		{name: "tensor not in index", want: ErrBadIndex,
			message: `safetensors b.safetensors: tensor "scale": not listed in model.safetensors.index.json`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				writeIndex(t, filepath.Join(dir, IndexFile), map[string]string{
					"model.embed.weight": "a.safetensors", "model.layers.0.w": "a.safetensors",
					"model.layers.0.b": "a.safetensors", "lm_head.weight": "b.safetensors",
				}, 0)
				return dir
			}},
		{name: "tensor in another shard", want: ErrBadIndex,
			message: `safetensors b.safetensors: tensor "lm_head.weight": model.safetensors.index.json places it in "a.safetensors"`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				writeIndex(t, filepath.Join(dir, IndexFile), map[string]string{
					"model.embed.weight": "a.safetensors", "model.layers.0.w": "a.safetensors",
					"model.layers.0.b": "a.safetensors", "lm_head.weight": "a.safetensors", "scale": "b.safetensors",
				}, 0)
				return dir
			}},
		{name: "listed tensor absent", want: ErrBadIndex,
			message: `safetensors model.safetensors.index.json: tensor "ghost": listed in weight_map, but absent from shard "b.safetensors"`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				writeIndex(t, filepath.Join(dir, IndexFile), map[string]string{
					"model.embed.weight": "a.safetensors", "model.layers.0.w": "a.safetensors",
					"model.layers.0.b": "a.safetensors", "lm_head.weight": "b.safetensors", "scale": "b.safetensors",
					"ghost": "b.safetensors",
				}, 0)
				return dir
			}},
		{name: "index lists a tensor twice", want: ErrDuplicateKey,
			message: `safetensors model.safetensors.index.json: duplicate key "scale" in weight_map`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				writeFile(t, filepath.Join(dir, IndexFile), `{"weight_map":{"scale":"a.safetensors","scale":"b.safetensors"}}`)
				return dir
			}},
		{name: "index path escapes", want: ErrBadIndex,
			message: `tensor "scale": shard path "../b.safetensors" leaves the checkpoint directory`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				writeFile(t, filepath.Join(dir, IndexFile), `{"weight_map":{"scale":"../b.safetensors"}}`)
				return dir
			}},
		{name: "index without weight_map", want: ErrBadIndex,
			message: `safetensors model.safetensors.index.json: weight_map missing`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				writeFile(t, filepath.Join(dir, IndexFile), `{"metadata":{"total_size":1}}`)
				return dir
			}},
		{name: "same tensor in two unindexed files", want: ErrDuplicateTensor,
			message: `safetensors b.safetensors: tensor "scale": also in "a.safetensors"`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, map[string][]string{"a.safetensors": {"scale"}, "b.safetensors": {"scale"}}, false)
				return dir
			}},
		{name: "broken shard in a subdirectory", want: ErrTruncated,
			message: `safetensors sub/model.safetensors: tensor "f": data_offsets [108,132] run past`,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				raw, err := os.ReadFile("testdata/safetensors/truncated.safetensors")
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "sub", "model.safetensors"), string(raw))
				return dir
			}},
		{name: "no safetensors", want: ErrNoSafetensors, message: "no safetensors file",
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeFile(t, filepath.Join(dir, "pytorch_model.bin"), "weights")
				return dir
			}},
		{name: "link to a directory", message: "link to a directory",
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				writeCheckpoint(t, dir, model, two, false)
				if err := os.Symlink(t.TempDir(), filepath.Join(dir, "elsewhere")); err != nil {
					t.Fatal(err)
				}
				return dir
			}},
		{name: "single file not safetensors", message: "not a .safetensors file",
			setup: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "config.json")
				writeFile(t, p, "{}")
				return p
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", "checkpoint", tt.fixture)
			if tt.setup != nil {
				path = tt.setup(t)
			}
			_, err := BuildCheckpointManifest(t.Context(), path)
			if err == nil {
				t.Fatal("built a manifest of a broken checkpoint")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %q is not %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q\nwant it to say %q", err, tt.message)
			}
		})
	}
}

// TestFileOutsideIndex checks that, with an index, a .safetensors file the
// index does not name (as Mistral ships consolidated.safetensors beside its
// shards) is a plain file: hashed, but not part of the model.
func TestFileOutsideIndex(t *testing.T) {
	model := testModel()
	dir := t.TempDir()
	writeCheckpoint(t, dir, model, map[string][]string{
		"model-00001-of-00002.safetensors": {"model.embed.weight", "model.layers.0.w", "model.layers.0.b"},
		"model-00002-of-00002.safetensors": {"lm_head.weight", "scale"},
	}, true)
	writeTensors(t, filepath.Join(dir, "consolidated.safetensors"), nil, src("tok_embeddings.weight", "U8", []int64{1}, []byte{1}))
	m := buildManifest(t, dir)
	checkManifest(t, dir, m, model)
	i := slices.IndexFunc(m.Files, func(f CheckpointFile) bool { return f.Path == "consolidated.safetensors" })
	if i < 0 || m.Files[i].Kind != FileKindPlain {
		t.Errorf("consolidated.safetensors: %+v, want a plain file", m.Files)
	}
}

// TestSymlinkedFiles checks that a Hugging Face cache snapshot, whose files
// are links into a blob store, hashes as the files it links to.
func TestSymlinkedFiles(t *testing.T) {
	model := testModel()
	real := t.TempDir()
	writeCheckpoint(t, real, model, map[string][]string{"model.safetensors": {"model.embed.weight", "model.layers.0.w", "model.layers.0.b", "lm_head.weight", "scale"}}, false)
	snapshot := t.TempDir()
	for _, name := range []string{"model.safetensors", "config.json"} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(snapshot, name)); err != nil {
			t.Fatal(err)
		}
	}
	a, b := buildManifest(t, real), buildManifest(t, snapshot)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("snapshot manifest\n%s\ndiffers from\n%s", jb, ja)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := BuildCheckpointManifest(ctx, filepath.Join(samples, "overall.safetensors")); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var benchMiB = flag.Int64("benchmib", 256, "size in MiB of each checkpoint the benchmarks generate")

// bf16Noise yields finite bf16 values in (-2, 2), with flip every element's
// lowest mantissa bit flipped, so two streams from the same seed differ in
// every element. It works per byte position, whatever the read sizes.
type bf16Noise struct {
	rng  *rand.ChaCha8
	flip bool
	pos  int64
}

func (r *bf16Noise) Read(p []byte) (int, error) {
	r.rng.Read(p)
	for i := range p {
		if (r.pos+int64(i))%2 == 1 {
			p[i] &= 0xBF // clear the top exponent bit of the high byte
		} else if r.flip {
			p[i] ^= 1
		}
	}
	r.pos += int64(len(p))
	return len(p), nil
}

// writeBenchCheckpoint writes a bf16 checkpoint of about mib MiB into dir:
// shards of up to 64 MiB, each of 8 MiB tensors, and an index.
func writeBenchCheckpoint(b *testing.B, dir string, mib int64, flip bool) int64 {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	const tensorMiB, shardMiB = 8, 64
	noise := &bf16Noise{rng: rand.NewChaCha8([32]byte{1}), flip: flip}
	weightMap := map[string]string{}
	var total int64
	for shard := int64(0); shard*shardMiB < mib; shard++ {
		file := fmt.Sprintf("model-%05d.safetensors", shard+1)
		var srcs []TensorSource
		for k := int64(0); k < shardMiB/tensorMiB && (shard*shardMiB+k*tensorMiB) < mib; k++ {
			name := fmt.Sprintf("layers.%d.%d.weight", shard, k)
			srcs = append(srcs, TensorSource{name, "BF16", []int64{tensorMiB << 10, 512}, io.LimitReader(noise, tensorMiB<<20)})
			weightMap[name] = file
			total += tensorMiB << 20
		}
		writeTensors(b, filepath.Join(dir, file), nil, srcs...)
	}
	writeIndex(b, filepath.Join(dir, IndexFile), weightMap, total)
	return total
}

// BenchmarkCheckpointDigest measures BuildCheckpointManifest over a cached
// bf16 checkpoint (-benchmib sets its size); bytes/s are checkpoint bytes.
func BenchmarkCheckpointDigest(b *testing.B) {
	dir := b.TempDir()
	size := writeBenchCheckpoint(b, dir, *benchMiB, false)
	b.SetBytes(size)
	for b.Loop() {
		if _, err := BuildCheckpointManifest(b.Context(), dir); err != nil {
			b.Fatal(err)
		}
	}
}
