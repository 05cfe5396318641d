package metrics

import (
	"bufio"
	"fmt"
	"os"
	"testing"
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
