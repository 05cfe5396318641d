package gpu

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

const (
	// DefaultInterval is how often a Sampler queries nvidia-smi: often
	// enough to catch a memory peak that lasts a few steps, rare enough to
	// cost nothing next to training.
	DefaultInterval = 5 * time.Second
	// defaultTimeout bounds one nvidia-smi run; a GPU in a bad state can
	// make it hang.
	defaultTimeout = 30 * time.Second
)

// Sample is one query's outcome: a reading per GPU, or why there is none.
type Sample struct {
	Time time.Time `json:"time"`
	GPUs []Reading `json:"gpus,omitempty"`
	// Err is set when nvidia-smi failed this time; sampling goes on.
	Err string `json:"error,omitempty"`
}

// State says whether a Sampler ever saw a GPU.
type State string

const (
	// NoGPU means no sample had a GPU in it: nvidia-smi is not on PATH (then
	// there are no samples at all), lists no device, or failed every time
	// (Result.Failures says so). It is a finding about the machine, not an
	// error.
	NoGPU State = "no-gpu"
	// Seen means at least one sample read at least one GPU.
	Seen State = "seen"
)

// Result is what a Sampler's Run did.
type Result struct {
	State State `json:"state"`
	// SMIPath is the nvidia-smi that ran, "" when none was on PATH.
	SMIPath  string `json:"smi_path,omitempty"`
	Samples  int    `json:"samples"`  // samples with readings
	Failures int    `json:"failures"` // samples where nvidia-smi failed
}

// Sampler queries nvidia-smi at a fixed interval while a stage runs and
// hands every Sample to OnSample, which records it (in the ledger).
type Sampler struct {
	// Interval between queries; zero means DefaultInterval.
	Interval time.Duration
	// Timeout for one query; zero means 30 s.
	Timeout time.Duration
	// OnSample receives each sample, failed ones included, on Run's
	// goroutine. An error from it stops Run: evidence that cannot be
	// recorded should not be collected silently.
	OnSample func(Sample) error
}

// Run samples at once and then every Interval until ctx is done, when it
// kills a query in flight and returns with a nil error. Without nvidia-smi
// on PATH it returns at once with State NoGPU. A failing query is recorded
// as a Sample with Err set and sampling continues.
func (s *Sampler) Run(ctx context.Context) (Result, error) {
	res := Result{State: NoGPU}
	path, err := exec.LookPath(smiCommand)
	if err != nil {
		return res, nil
	}
	res.SMIPath = path
	interval, timeout := s.Interval, s.Timeout
	if interval <= 0 {
		interval = DefaultInterval
	}
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		smp := Sample{Time: time.Now().UTC()}
		rs, err := query(ctx, path, timeout)
		if ctx.Err() != nil {
			return res, nil // a query cut short by the stop is no failure
		}
		switch {
		case err != nil:
			smp.Err = err.Error()
			res.Failures++
		case len(rs) > 0:
			smp.GPUs = rs
			res.Samples++
			res.State = Seen
		}
		if s.OnSample != nil {
			if err := s.OnSample(smp); err != nil {
				return res, fmt.Errorf("record gpu sample: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return res, nil
		case <-tick.C:
		}
	}
}
