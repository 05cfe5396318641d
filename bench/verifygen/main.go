// Command verifygen writes a ledger of N entries (default 100,000) whose
// blobs hold B bytes in all (default 1 GiB, in 1 MiB blobs of random
// bytes), with a run and its metrics, for timing `rlgate verify` and how
// fast Ctrl-C stops it.
//
//	go run ./bench/verifygen -ledger DIR [-entries 100000] [-blob-bytes 1073741824]
package main

import (
	"context"
	"flag"
	"log"
	"math/rand/v2"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

func main() {
	dir := flag.String("ledger", "", "ledger directory to create")
	n := flag.Int("entries", 100_000, "entries to write")
	total := flag.Int64("blob-bytes", 1<<30, "bytes of blobs in all")
	flag.Parse()
	ctx := context.Background()
	l, err := ledger.Init(ctx, *dir)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	const blobSize = 1 << 20
	blobs := int(*total / blobSize)
	every := max(1, *n/max(1, blobs)) // one entry in every names a blob
	rng := rand.NewChaCha8([32]byte{})
	buf := make([]byte, blobSize)
	recs := []ledger.Record{{Kind: records.KindRunStart, Run: "rl1", Body: ledger.RunStart{Stage: "rl"}}}
	for i := 1; i < *n-1; i++ { // with ledger.init and run.start, n entries
		r := ledger.Record{Kind: records.KindLog, Run: "rl1", Body: map[string]int{"i": i}}
		switch {
		case i%every == 0 && blobs > 0:
			blobs--
			rng.Read(buf)
			d, err := l.PutBlobBytes(buf)
			if err != nil {
				log.Fatal(err)
			}
			r.Blobs = []ledger.Digest{d}
		case i%10 == 0:
			r = ledger.Record{Kind: records.KindMetrics, Run: "rl1", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: int64(i), Key: "reward", Value: float64(i%100) / 100}}}}
		}
		recs = append(recs, r)
		if len(recs) == 1000 || i == *n-2 {
			if _, err := l.Append(ctx, recs...); err != nil {
				log.Fatal(err)
			}
			recs = recs[:0]
		}
	}
}
