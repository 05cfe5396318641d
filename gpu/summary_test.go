package gpu

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	gpu := func(index int, uuid string, mem, util float64, power *float64) Reading {
		return Reading{
			Device:         Device{Index: index, UUID: uuid, Name: "H100", Driver: "550", MemoryTotalMiB: f(81559)},
			MemoryUsedMiB:  f(mem),
			UtilizationPct: f(util),
			PowerW:         power,
		}
	}
	samples := []Sample{
		// Out of order on purpose: Summarize sorts by time.
		{Time: t0.Add(time.Hour), GPUs: []Reading{gpu(1, "GPU-b", 1000, 0, nil), gpu(0, "GPU-a", 30000, 100, f(700))}},
		{Time: t0, GPUs: []Reading{gpu(0, "GPU-a", 10000, 50, f(300)), gpu(1, "GPU-b", 50000, 100, nil)}},
		{Time: t0.Add(30 * time.Minute), Err: "run nvidia-smi: exit status 1"},
	}
	s := Summarize(samples)

	if s.Samples != 2 || s.Failures != 1 || !s.Start.Equal(t0) || !s.End.Equal(t0.Add(time.Hour)) {
		t.Errorf("samples %d, failures %d, span %v..%v", s.Samples, s.Failures, s.Start, s.End)
	}
	if len(s.GPUs) != 2 || s.GPUs[0].UUID != "GPU-a" || s.GPUs[1].UUID != "GPU-b" {
		t.Fatalf("gpus = %+v, want GPU-a then GPU-b", s.GPUs)
	}
	a, b := s.GPUs[0], s.GPUs[1]
	checks := []struct {
		name      string
		got, want *float64
	}{
		{"GPU-a peak memory", a.PeakMemoryUsedMiB, f(30000)},
		{"GPU-b peak memory", b.PeakMemoryUsedMiB, f(50000)},
		{"overall peak memory (one sample, all GPUs)", s.PeakMemoryUsedMiB, f(60000)},
		{"GPU-a mean utilization", a.MeanUtilizationPct, f(75)},
		{"GPU-a mean power", a.MeanPowerW, f(500)},
		{"GPU-b mean power (never readable)", b.MeanPowerW, nil},
		{"overall mean utilization", s.MeanUtilizationPct, f(62.5)},
		{"overall mean power (GPU-b absent, not zero)", s.MeanPowerW, f(500)},
	}
	for _, c := range checks {
		if (c.got == nil) != (c.want == nil) || c.got != nil && math.Abs(*c.got-*c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, deref(c.got), deref(c.want))
		}
	}
	// Two GPUs over one hour; GPU-a ran at (50+100)/2 % and GPU-b at
	// (100+0)/2 % over that hour.
	if s.GPUHours != 2 || math.Abs(a.BusyHours-0.75) > 1e-9 || math.Abs(s.BusyGPUHours-1.25) > 1e-9 {
		t.Errorf("gpu-hours %v, busy %v (GPU-a %v); want 2, 1.25 (0.75)", s.GPUHours, s.BusyGPUHours, a.BusyHours)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("summary does not marshal: %v", err)
	}
}

func TestSummarizeEdgeCases(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	noUUID := Reading{Device: Device{Index: 3}, UtilizationPct: f(10)}
	tests := []struct {
		name     string
		samples  []Sample
		gpus     int
		gpuHours float64
	}{
		{"nothing", nil, 0, 0},
		{"only failures", []Sample{{Time: t0, Err: "x"}}, 0, 0},
		{"one sample spans no time", []Sample{{Time: t0, GPUs: []Reading{noUUID}}}, 1, 0},
		{"GPUs without UUID told apart by index", []Sample{
			{Time: t0, GPUs: []Reading{noUUID}},
			{Time: t0.Add(6 * time.Minute), GPUs: []Reading{noUUID}},
		}, 1, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.samples)
			if len(s.GPUs) != tt.gpus || math.Abs(s.GPUHours-tt.gpuHours) > 1e-9 {
				t.Errorf("gpus %d, gpu-hours %v; want %d, %v", len(s.GPUs), s.GPUHours, tt.gpus, tt.gpuHours)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSummarizeUtilizationPercentiles: the median and 95th percentile of
// utilization beside the mean, per GPU and over all readings, skipping
// absent readings. The expected values are NumPy's (1.24, default linear
// method):
//
//	a = [12, 97, 90, 0, 35, 80, 100]; b = [50, 50, 60]
//	np.percentile(a, [50, 95]) → 80, 99.1;    np.mean(a) → 59.142857142857146
//	np.percentile(b, [50, 95]) → 50, 59;      np.mean(b) → 53.333333333333336
//	np.percentile(a+b, [50, 95]) → 55, 98.65; np.mean(a+b) → 57.4
func TestSummarizeUtilizationPercentiles(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	a := []float64{12, 97, 90, 0, 35, 80, 100}
	b := []*float64{f(50), nil, f(50), nil, f(60), nil, nil}
	var samples []Sample
	for i := range a {
		samples = append(samples, Sample{Time: t0.Add(time.Duration(i) * time.Minute), GPUs: []Reading{
			{Device: Device{Index: 0, UUID: "GPU-a"}, UtilizationPct: f(a[i])},
			{Device: Device{Index: 1, UUID: "GPU-b"}, UtilizationPct: b[i]},
		}})
	}
	s := Summarize(samples)
	type pcts struct{ Mean, P50, P95 float64 }
	got := func(mean, p50, p95 *float64) pcts {
		if mean == nil || p50 == nil || p95 == nil {
			t.Fatalf("mean %v, p50 %v, p95 %v: want all three", deref(mean), deref(p50), deref(p95))
		}
		return pcts{*mean, *p50, *p95}
	}
	want := []pcts{{59.142857142857146, 80, 99.1}, {53.333333333333336, 50, 59}, {57.4, 55, 98.65}}
	have := []pcts{
		got(s.GPUs[0].MeanUtilizationPct, s.GPUs[0].P50UtilizationPct, s.GPUs[0].P95UtilizationPct),
		got(s.GPUs[1].MeanUtilizationPct, s.GPUs[1].P50UtilizationPct, s.GPUs[1].P95UtilizationPct),
		got(s.MeanUtilizationPct, s.P50UtilizationPct, s.P95UtilizationPct),
	}
	if diff := cmp.Diff(want, have, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("utilization of GPU-a, GPU-b, all (-numpy +got):\n%s", diff)
	}

	// No utilization reading: no mean and no percentiles, not zeros.
	none := Summarize([]Sample{{Time: t0, GPUs: []Reading{{Device: Device{Index: 0}}}}})
	if none.P50UtilizationPct != nil || none.P95UtilizationPct != nil || none.GPUs[0].P95UtilizationPct != nil {
		t.Errorf("percentiles of no readings: %v %v %v, want none", deref(none.P50UtilizationPct), deref(none.P95UtilizationPct), deref(none.GPUs[0].P95UtilizationPct))
	}
}
