// Command ckptgen writes a sharded bf16 safetensors checkpoint of random,
// finite weights with Llama-7B-like tensor shapes, for benchmarking the
// checkpoint digest and diff on realistic files. Two seeds give two
// checkpoints of the same tensors that differ in every tensor.
//
//	ckptgen -out DIR [-mib 4096] [-shard-mib 1024] [-seed 1]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/manifests"
)

// tensor is one tensor to generate.
type tensor struct {
	name  string
	shape []int64
}

func (t tensor) bytes() int64 {
	n := int64(2) // bf16
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// plan lists tensors, an embedding then layers, until they hold at least
// mib MiB.
func plan(mib int64) []tensor {
	const hidden, inter, vocab = 4096, 11008, 32000
	ts := []tensor{{"model.embed_tokens.weight", []int64{vocab, hidden}}}
	total := ts[0].bytes()
	for layer := 0; total < mib<<20; layer++ {
		p := fmt.Sprintf("model.layers.%d.", layer)
		for _, t := range []tensor{
			{p + "input_layernorm.weight", []int64{hidden}},
			{p + "self_attn.q_proj.weight", []int64{hidden, hidden}},
			{p + "self_attn.k_proj.weight", []int64{hidden, hidden}},
			{p + "self_attn.v_proj.weight", []int64{hidden, hidden}},
			{p + "self_attn.o_proj.weight", []int64{hidden, hidden}},
			{p + "post_attention_layernorm.weight", []int64{hidden}},
			{p + "mlp.gate_proj.weight", []int64{inter, hidden}},
			{p + "mlp.up_proj.weight", []int64{inter, hidden}},
			{p + "mlp.down_proj.weight", []int64{hidden, inter}},
		} {
			if total >= mib<<20 {
				break
			}
			ts = append(ts, t)
			total += t.bytes()
		}
	}
	return ts
}

// noise yields random bf16 values in (-2, 2): the top exponent bit of every
// high byte is cleared, so none is infinite or NaN.
type noise struct {
	rng *rand.ChaCha8
	pos int64
}

func (r *noise) Read(p []byte) (int, error) {
	r.rng.Read(p)
	for i := range p {
		if (r.pos+int64(i))%2 == 1 {
			p[i] &= 0xBF
		}
	}
	r.pos += int64(len(p))
	return len(p), nil
}

func main() {
	out := flag.String("out", "", "directory to write the checkpoint into (created)")
	mib := flag.Int64("mib", 4096, "approximate checkpoint size in MiB")
	shardMiB := flag.Int64("shard-mib", 1024, "largest shard size in MiB")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *out == "" {
		log.Fatal("ckptgen: -out is required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	var key [32]byte
	key[0] = byte(*seed)
	src := &noise{rng: rand.NewChaCha8(key)}
	ts := plan(*mib)

	// Group tensors into shards of at most shardMiB (a larger tensor gets a
	// shard of its own), then name them as Transformers does.
	var shards [][]tensor
	var size int64
	for _, t := range ts {
		if len(shards) == 0 || size+t.bytes() > *shardMiB<<20 {
			shards = append(shards, nil)
			size = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		size += t.bytes()
	}
	weightMap := map[string]string{}
	var total int64
	for i, shard := range shards {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		var srcs []manifests.TensorSource
		for _, t := range shard {
			srcs = append(srcs, manifests.TensorSource{Name: t.name, DType: "BF16", Shape: t.shape, Data: io.LimitReader(src, t.bytes())})
			weightMap[t.name] = file
			total += t.bytes()
		}
		if err := writeFile(filepath.Join(*out, file), func(w io.Writer) error {
			return manifests.WriteSafetensors(w, map[string]string{"format": "pt"}, srcs)
		}); err != nil {
			log.Fatal(err)
		}
	}
	if err := writeFile(filepath.Join(*out, manifests.IndexFile), func(w io.Writer) error {
		return manifests.WriteCheckpointIndex(w, weightMap, total)
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d tensors, %d bytes, in %d shards to %s\n", len(ts), total, len(shards), *out)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := write(w); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
