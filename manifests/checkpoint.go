package manifests

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"

	"github.com/rlgate/rlgate/ledger"
)

// CheckpointManifestVersion is the version of the CheckpointManifest layout
// and of the identity and file-digest definitions below.
const CheckpointManifestVersion = 1

// Domain tags keep the derived digests apart from each other and from a
// plain BLAKE3 of any file.
const (
	identityTag        = "rlgate.model-identity.v1"
	safetensorsFileTag = "rlgate.safetensors-file.v1"
)

// File kinds in a CheckpointManifest, which say how Digest was computed.
const (
	// FileKindPlain files carry the BLAKE3 of their bytes.
	FileKindPlain = "file"
	// FileKindSafetensors files carry SafetensorsFileDigest.
	FileKindSafetensors = "safetensors"
)

// CheckpointManifest records a checkpoint: every file's digest and size, and
// every tensor's name, dtype, shape, digest and place. Its JSON form is a
// stable contract: fields are only ever added.
type CheckpointManifest struct {
	Version int `json:"version"`
	// Identity is ModelIdentity(Tensors): equal for any sharding or export of
	// the same weights.
	Identity ledger.Digest      `json:"model_identity"`
	Size     int64              `json:"size"` // all files together
	Files    []CheckpointFile   `json:"files"`
	Tensors  []CheckpointTensor `json:"tensors"`
}

// CheckpointFile is one file of a checkpoint.
type CheckpointFile struct {
	Path   string        `json:"path"` // slash-separated, relative to the checkpoint
	Size   int64         `json:"size"`
	Kind   string        `json:"kind"` // FileKindPlain or FileKindSafetensors
	Digest ledger.Digest `json:"digest"`
	// HeaderDigest, for safetensors files only, is the BLAKE3 of the 8-byte
	// length prefix and the JSON header as stored; with the tensor digests it
	// gives Digest, so the manifest alone can be checked.
	HeaderDigest *ledger.Digest `json:"header_digest,omitempty"`
}

// CheckpointTensor is one tensor of a checkpoint.
type CheckpointTensor struct {
	Name   string        `json:"name"`
	DType  DType         `json:"dtype"`
	Shape  []int64       `json:"shape"`
	Size   int64         `json:"size"`   // bytes
	Digest ledger.Digest `json:"digest"` // BLAKE3 of the raw little-endian bytes
	File   string        `json:"file"`
	// DataOffsets are the header's [begin, end), relative to the file's data
	// section.
	DataOffsets [2]int64 `json:"data_offsets"`
}

// BuildCheckpointManifest hashes the checkpoint at path (a directory or a
// single .safetensors file, as openCheckpoint describes) reading every byte
// once: tensors and plain files are hashed in parallel on GOMAXPROCS
// workers, largest first, in fixed-size chunks so memory stays small. The
// files holding the model's tensors get a FileKindSafetensors digest; every
// other file, any other .safetensors file included, its plain BLAKE3.
func BuildCheckpointManifest(ctx context.Context, path string) (*CheckpointManifest, error) {
	c, err := openCheckpoint(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	type job struct {
		size int64
		run  func(ctx context.Context, buf []byte) error
	}
	var jobs []job
	tensorDigests := make([][]ledger.Digest, len(c.shards))
	for i, sf := range c.shards {
		tensorDigests[i] = make([]ledger.Digest, len(sf.Tensors))
		for j, t := range sf.Tensors {
			jobs = append(jobs, job{t.Len(), func(ctx context.Context, buf []byte) error {
				d, err := hashRange(ctx, sf.f, sf.DataStart+t.Begin, t.Len(), buf)
				if err != nil {
					return fmt.Errorf("hash %s: tensor %q: %w", sf.Name, t.Name, err)
				}
				tensorDigests[i][j] = d
				return nil
			}})
		}
	}
	shardIndex := map[string]int{}
	for i, sf := range c.shards {
		shardIndex[sf.Name] = i
	}
	m := &CheckpointManifest{Version: CheckpointManifestVersion, Files: make([]CheckpointFile, len(c.files))}
	for i, f := range c.files {
		m.Files[i] = CheckpointFile{Path: f.path, Size: f.size, Kind: FileKindPlain}
		if _, ok := shardIndex[f.path]; ok {
			continue
		}
		jobs = append(jobs, job{f.size, func(ctx context.Context, buf []byte) error {
			d, n, err := hashFile(ctx, c.abs(f.path), buf)
			m.Files[i].Digest, m.Files[i].Size = d, n
			return err
		}})
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.size, a.size) })
	err = parallel(ctx, len(jobs), func() func(context.Context, int) error {
		buf := make([]byte, readBufSize)
		return func(ctx context.Context, i int) error { return jobs[i].run(ctx, buf) }
	})
	if err != nil {
		return nil, err
	}

	for i, sf := range c.shards {
		for j, t := range sf.Tensors {
			m.Tensors = append(m.Tensors, CheckpointTensor{
				Name: t.Name, DType: t.DType, Shape: t.Shape, Size: t.Len(),
				Digest: tensorDigests[i][j], File: sf.Name, DataOffsets: [2]int64{t.Begin, t.End},
			})
		}
	}
	for i := range m.Files {
		f := &m.Files[i]
		if si, ok := shardIndex[f.Path]; ok {
			sf := c.shards[si]
			hd := sf.HeaderDigest
			f.Kind, f.Size, f.HeaderDigest = FileKindSafetensors, sf.Size, &hd
			f.Digest = SafetensorsFileDigest(hd, tensorDigests[si])
		}
		m.Size += f.Size
	}
	slices.SortFunc(m.Tensors, func(a, b CheckpointTensor) int { return cmp.Compare(a.Name, b.Name) })
	m.Identity = ModelIdentity(m.Tensors)
	return m, nil
}

// ModelIdentity returns the model identity of a set of uniquely named
// tensors: BLAKE3 over the domain tag and the tensors sorted by name, each as
// (name, dtype, shape, tensor digest), every variable-length field prefixed
// by its length, so that no two different lists encode alike:
//
//	str(s)   = u64le(len(s)) || s
//	identity = BLAKE3( str("rlgate.model-identity.v1") || u64le(n) ||
//	                   for each tensor by name (bytewise):
//	                     str(name) || str(dtype) || u64le(rank) ||
//	                     u64le(dim_0) || … || u64le(dim_rank-1) || digest[32] )
//
// File names, sharding, offsets and safetensors metadata do not enter, so a
// re-sharded or re-exported copy of the same weights has the same identity.
func ModelIdentity(tensors []CheckpointTensor) ledger.Digest {
	sorted := slices.SortedStableFunc(slices.Values(tensors), func(a, b CheckpointTensor) int {
		return cmp.Compare(a.Name, b.Name)
	})
	// NB: the bytes hashed here define the model identity; changing them
	// breaks every recorded manifest.
	h := ledger.Hasher()
	putString(h, identityTag)
	putUint(h, uint64(len(sorted)))
	for _, t := range sorted {
		putString(h, t.Name)
		putString(h, string(t.DType))
		putUint(h, uint64(len(t.Shape)))
		for _, d := range t.Shape {
			putUint(h, uint64(d))
		}
		h.Write(t.Digest[:])
	}
	return ledger.SumDigest(h)
}

// SafetensorsFileDigest returns the digest of a safetensors file from the
// digest of its first 8 + header-length bytes and the digests of its tensors
// in data-offset order (the order of SafetensorsHeader.Tensors). Because the
// tensors tile the data section, this commits to every byte of the file, yet
// lets each byte be read once:
//
//	file = BLAKE3( str("rlgate.safetensors-file.v1") || header_digest[32] ||
//	               u64le(k) || tensor_digest_1[32] || … || tensor_digest_k[32] )
func SafetensorsFileDigest(header ledger.Digest, tensors []ledger.Digest) ledger.Digest {
	// NB: the bytes hashed here define the file digest; changing them breaks
	// every recorded manifest.
	h := ledger.Hasher()
	putString(h, safetensorsFileTag)
	h.Write(header[:])
	putUint(h, uint64(len(tensors)))
	for _, d := range tensors {
		h.Write(d[:])
	}
	return ledger.SumDigest(h)
}

// putUint writes v as 8 little-endian bytes (u64le): checkpoint digests
// use little-endian, while entry hashes and tree digests use big-endian.
// FORMAT.md fixes each: do not unify them.
func putUint(h hash.Hash, v uint64) {
	h.Write(binary.LittleEndian.AppendUint64(nil, v))
}

// putString writes s prefixed by its length.
func putString(h hash.Hash, s string) {
	putUint(h, uint64(len(s)))
	h.Write([]byte(s))
}
