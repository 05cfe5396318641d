package metrics

import (
	"bufio"
	"fmt"
	"os"
	"testing"

	"github.com/rlgate/rlgate/stages/metrics/trackertest"
)

// BenchmarkParseVerlJSONL parses a veRL file log of 10,000 steps × 80 keys
// (about 30 MB): the size of a long RL run, parsed before the ledger insert.
func BenchmarkParseVerlJSONL(b *testing.B) {
	const steps, keys = 10000, 80
	path := b.TempDir() + "/verl.jsonl"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("group%d/metric_%02d", k%7, k)
	}
	for s := range steps {
		fmt.Fprintf(w, `{"step": %d, "data": {`, s)
		for k, name := range names {
			if k > 0 {
				w.WriteString(", ")
			}
			fmt.Fprintf(w, `"%s": %.17g`, name, float64(s)*1.000123+float64(k)/3)
		}
		w.WriteString("}}\n")
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for b.Loop() {
		pts, _, err := ParseFile(path, Options{Format: FormatVerl})
		if err != nil {
			b.Fatal(err)
		}
		if len(pts) != steps*keys {
			b.Fatalf("%d points, want %d", len(pts), steps*keys)
		}
	}
}

// BenchmarkParseWandB decodes a W&B run of 100,000 steps x 50 keys (about
// 170 MB, written by trackertest): the parse alone, before the ledger.
func BenchmarkParseWandB(b *testing.B) {
	const steps, keys = 100000, 50
	data := trackertest.WandBRun(steps, keys)
	path := b.TempDir() + "/run-bench.wandb"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	data = nil
	b.ResetTimer()
	for b.Loop() {
		pts, _, err := ParseFile(path, Options{Format: FormatWandB})
		if err != nil || len(pts) != steps*keys {
			b.Fatalf("%d points, %v", len(pts), err)
		}
	}
}
