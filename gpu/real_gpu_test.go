//go:build gpu

package gpu

import (
	"context"
	"testing"
	"time"
)

// Run on a machine with an NVIDIA GPU: go test -tags gpu ./gpu/...
// It checks the query against a real nvidia-smi, whose output the other
// tests only imitate.

func TestRealInventory(t *testing.T) {
	ds, err := Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.UUID == "" || d.Name == "" || d.Driver == "" || d.MemoryTotalMiB == nil {
			t.Errorf("device %+v lacks identity", d)
		}
	}
}

func TestRealSampler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var samples []Sample
	s := Sampler{Interval: 200 * time.Millisecond, OnSample: func(smp Sample) error {
		if samples = append(samples, smp); len(samples) == 3 {
			cancel()
		}
		return nil
	}}
	res, err := s.Run(ctx)
	if err != nil || res.State != Seen || res.Failures != 0 {
		t.Fatalf("Run = %+v, %v; want GPUs seen without failures", res, err)
	}
	sum := Summarize(samples)
	if len(sum.GPUs) == 0 || sum.PeakMemoryUsedMiB == nil || sum.GPUHours <= 0 {
		t.Errorf("summary = %+v", sum)
	}
}
