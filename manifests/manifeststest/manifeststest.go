// Package manifeststest writes checkpoints for tests: copies of a real
// safetensors file, re-sharded or with chosen bytes changed, so that audits
// and commands are tested on real files rather than mocks.
package manifeststest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/manifests"
)

// Copy writes the tensors of the safetensors file src into the directory
// dst as a checkpoint of n shards, in src's tensor order, with an index when
// n > 1. edit, when not nil, may change each tensor's raw bytes in place
// first. It returns dst.
func Copy(t testing.TB, src, dst string, n int, edit func(name string, data []byte)) string {
	t.Helper()
	sf, err := manifests.OpenSafetensors(src)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	weightMap := map[string]string{}
	var total int64
	per := (len(sf.Tensors) + n - 1) / n
	for shard := range n {
		file := "model.safetensors"
		if n > 1 {
			file = fmt.Sprintf("model-%05d-of-%05d.safetensors", shard+1, n)
		}
		var srcs []manifests.TensorSource
		for _, ti := range sf.Tensors[min(shard*per, len(sf.Tensors)):min((shard+1)*per, len(sf.Tensors))] {
			data, err := io.ReadAll(sf.TensorReader(ti))
			if err != nil {
				t.Fatal(err)
			}
			if edit != nil {
				edit(ti.Name, data)
			}
			srcs = append(srcs, manifests.TensorSource{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: bytes.NewReader(data)})
			weightMap[ti.Name] = file
			total += int64(len(data))
		}
		write(t, filepath.Join(dst, file), func(w io.Writer) error { return manifests.WriteSafetensors(w, sf.Metadata, srcs) })
	}
	if n > 1 {
		write(t, filepath.Join(dst, manifests.IndexFile), func(w io.Writer) error { return manifests.WriteCheckpointIndex(w, weightMap, total) })
	}
	return dst
}

func write(t testing.TB, path string, fn func(io.Writer) error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Flip returns an edit for Copy that XORs mask into byte i of tensor name,
// the smallest change a test can make to one tensor.
func Flip(name string, i int, mask byte) func(string, []byte) {
	return func(n string, data []byte) {
		if n == name {
			data[i] ^= mask
		}
	}
}

// Checkpoints are the checkpoints the weights audit and the ckpt commands
// are tested on, all derived from one real safetensors file.
type Checkpoints struct {
	// Base is the sample itself; NoUpdate an identical copy, as an lr = 0
	// run writes it back.
	Base, NoUpdate string
	// Trained has element 0 of tensor f (F32, -3..2) turned from -3 into
	// -2 (bit 22); Resharded is the same weights in three shards.
	Trained, Resharded string
	// BelowTolerance flips the lowest mantissa bit of -3 in f, moving it by
	// 2.4e-7: inside the element rule's tolerance 1e-8 + 1e-6·3.
	BelowTolerance string
	// ChangedD flips a low bit of tensor d (F64), in two shards: an lr = 0
	// run that nonetheless changed one tensor.
	ChangedD string
}

// WriteCheckpoints writes Checkpoints of sample into a temporary directory.
func WriteCheckpoints(t testing.TB, sample string) Checkpoints {
	t.Helper()
	dir := t.TempDir()
	return Checkpoints{
		Base:           sample,
		NoUpdate:       Copy(t, sample, filepath.Join(dir, "noupdate"), 1, nil),
		Trained:        Copy(t, sample, filepath.Join(dir, "trained"), 1, Flip("f", 2, 0x40)),
		Resharded:      Copy(t, sample, filepath.Join(dir, "resharded"), 3, Flip("f", 2, 0x40)),
		BelowTolerance: Copy(t, sample, filepath.Join(dir, "below-tolerance"), 1, Flip("f", 0, 0x01)),
		ChangedD:       Copy(t, sample, filepath.Join(dir, "changed-d"), 2, Flip("d", 9, 0x01)),
	}
}
