package gpu

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	mstats "github.com/montanaflynn/stats"
)

// GPUSummary is one GPU's share of a Summary.
type GPUSummary struct {
	Device
	// Samples is the number of samples that read this GPU.
	Samples            int      `json:"samples"`
	PeakMemoryUsedMiB  *float64 `json:"peak_memory_used_mib,omitempty"`
	MeanUtilizationPct *float64 `json:"mean_utilization_pct,omitempty"`
	// P50UtilizationPct and P95UtilizationPct: see Summary.
	P50UtilizationPct *float64 `json:"p50_utilization_pct,omitempty"`
	P95UtilizationPct *float64 `json:"p95_utilization_pct,omitempty"`
	MeanPowerW        *float64 `json:"mean_power_w,omitempty"`
	// BusyHours integrates utilization over time (see Summary.BusyGPUHours).
	BusyHours float64 `json:"busy_hours"`
}

// Summary condenses a stage's samples into what a report and the
// fixed-budget audit compare between runs.
type Summary struct {
	GPUs []GPUSummary `json:"gpus"`
	// Samples with readings, and samples where nvidia-smi failed.
	Samples  int `json:"samples"`
	Failures int `json:"failures"`
	// Start and End are the first and last samples with readings.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// PeakMemoryUsedMiB is the most memory in use on all GPUs together at
	// one sample, which is what a machine must offer to rerun the stage.
	PeakMemoryUsedMiB *float64 `json:"peak_memory_used_mib,omitempty"`
	// MeanUtilizationPct and MeanPowerW average every reading that has one.
	MeanUtilizationPct *float64 `json:"mean_utilization_pct,omitempty"`
	MeanPowerW         *float64 `json:"mean_power_w,omitempty"`
	// P50UtilizationPct and P95UtilizationPct are the median and 95th
	// percentile of the same readings (linear interpolation between
	// closest ranks, NumPy's default): a mean of 50% may be a GPU busy
	// half the time or one never above 50%, which these tell apart.
	P50UtilizationPct *float64 `json:"p50_utilization_pct,omitempty"`
	P95UtilizationPct *float64 `json:"p95_utilization_pct,omitempty"`
	// GPUHours is the number of GPUs seen times End − Start: the GPUs the
	// stage held, whether busy or not, over the time sampling saw them. It
	// leaves out up to one interval at each end, so a stage shorter than
	// one interval shows 0.
	GPUHours float64 `json:"gpu_hours"`
	// BusyGPUHours sums, over GPUs, utilization × time, integrated by the
	// trapezoid rule between consecutive readings: an idle GPU counts 0,
	// one at 50% for an hour counts 0.5.
	BusyGPUHours float64 `json:"busy_gpu_hours"`
}

// Summarize condenses samples, in any order. GPUs are told apart by UUID, or
// by index when nvidia-smi gave no UUID, and listed by index; a GPU's
// Device is taken from its first reading.
func Summarize(samples []Sample) Summary {
	samples = slices.Clone(samples)
	slices.SortStableFunc(samples, func(a, b Sample) int { return a.Time.Compare(b.Time) })

	type acc struct {
		sum         GPUSummary
		util, power readings
		lastUtil    *float64
		lastTime    time.Time
	}
	var s Summary
	byID := map[string]*acc{}
	var order []*acc
	var util, power readings
	for _, smp := range samples {
		if smp.Err != "" {
			s.Failures++
		}
		if len(smp.GPUs) == 0 {
			continue
		}
		s.Samples++
		if s.Start.IsZero() {
			s.Start = smp.Time
		}
		s.End = smp.Time
		var total *float64
		for _, r := range smp.GPUs {
			a := byID[r.id()]
			if a == nil {
				a = &acc{sum: GPUSummary{Device: r.Device}}
				byID[r.id()] = a
				order = append(order, a)
			}
			a.sum.Samples++
			a.sum.PeakMemoryUsedMiB = maxOf(a.sum.PeakMemoryUsedMiB, r.MemoryUsedMiB)
			total = addTo(total, r.MemoryUsedMiB)
			a.util.add(r.UtilizationPct)
			a.power.add(r.PowerW)
			util.add(r.UtilizationPct)
			power.add(r.PowerW)
			if r.UtilizationPct != nil {
				if a.lastUtil != nil {
					h := smp.Time.Sub(a.lastTime).Hours()
					a.sum.BusyHours += (*a.lastUtil + *r.UtilizationPct) / 200 * h
				}
				a.lastUtil, a.lastTime = r.UtilizationPct, smp.Time
			}
		}
		s.PeakMemoryUsedMiB = maxOf(s.PeakMemoryUsedMiB, total)
	}
	for _, a := range order {
		a.sum.MeanUtilizationPct, a.sum.P50UtilizationPct, a.sum.P95UtilizationPct = a.util.mean(), a.util.percentile(50), a.util.percentile(95)
		a.sum.MeanPowerW = a.power.mean()
		s.BusyGPUHours += a.sum.BusyHours
		s.GPUs = append(s.GPUs, a.sum)
	}
	slices.SortStableFunc(s.GPUs, func(a, b GPUSummary) int { return cmp.Compare(a.Index, b.Index) })
	s.MeanUtilizationPct, s.P50UtilizationPct, s.P95UtilizationPct = util.mean(), util.percentile(50), util.percentile(95)
	s.MeanPowerW = power.mean()
	s.GPUHours = float64(len(s.GPUs)) * s.End.Sub(s.Start).Hours()
	return s
}

// id tells GPUs apart across samples.
func (r Reading) id() string {
	if r.UUID != "" {
		return r.UUID
	}
	return "index:" + strconv.Itoa(r.Index)
}

// readings collects the values that are present; its summaries are nil
// when there is none: no reading, no mean.
type readings []float64

func (r *readings) add(v *float64) {
	if v != nil {
		*r = append(*r, *v)
	}
}

func (r readings) mean() *float64 {
	return present(mstats.Mean(mstats.Float64Data(r)))
}

// percentile interpolates linearly between closest ranks, as NumPy's
// percentile does by default.
func (r readings) percentile(p float64) *float64 {
	return present(mstats.Percentile(mstats.Float64Data(r), p))
}

// present turns a summary of no readings (an error) into nil.
func present(v float64, err error) *float64 {
	if err != nil {
		return nil
	}
	return &v
}

// maxOf returns the larger of two optional values.
func maxOf(a, b *float64) *float64 {
	if b == nil || a != nil && *a >= *b {
		return a
	}
	v := *b
	return &v
}

// addTo adds an optional value to an optional total.
func addTo(total, v *float64) *float64 {
	if v == nil {
		return total
	}
	t := *v
	if total != nil {
		t += *total
	}
	return &t
}
