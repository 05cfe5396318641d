// Command ckptdigest builds the checkpoint manifest of one path and prints
// its model identity and throughput, for bench/ckpt.sh.
//
//	ckptdigest PATH
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/rlgate/rlgate/manifests"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: ckptdigest PATH")
	}
	start := time.Now()
	m, err := manifests.BuildCheckpointManifest(context.Background(), os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("identity=%s files=%d tensors=%d bytes=%d seconds=%.3f gbps=%.2f\n",
		m.Identity, len(m.Files), len(m.Tensors), m.Size, secs, float64(m.Size)/secs/1e9)
}
