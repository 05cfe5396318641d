package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// collect runs a Sampler until it has delivered n samples.
func collect(t *testing.T, n int) (Result, []Sample, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []Sample
	s := Sampler{Interval: 10 * time.Millisecond, OnSample: func(smp Sample) error {
		got = append(got, smp)
		if len(got) == n {
			cancel()
		}
		return nil
	}}
	res, err := s.Run(ctx)
	return res, got, err
}

func TestSampler(t *testing.T) {
	fakeSMI(t,
		twoGPUs,
		"exit 1: Unable to determine the device handle for GPU0000:01:00.0: Unknown Error",
		powerNA,
	)
	res, got, err := collect(t, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d samples, want 3", len(got))
	}
	if len(got[0].GPUs) != 2 || got[0].Err != "" {
		t.Errorf("sample 0 = %+v, want two GPUs", got[0])
	}
	if len(got[1].GPUs) != 0 || !strings.Contains(got[1].Err, "Unknown Error") {
		t.Errorf("sample 1 = %+v, want the failure with nvidia-smi's reason", got[1])
	}
	if len(got[2].GPUs) != 1 || got[2].GPUs[0].PowerW != nil {
		t.Errorf("sample 2 = %+v, want one GPU without power", got[2])
	}
	if !got[0].Time.Before(got[2].Time) {
		t.Errorf("sample times %v, %v do not advance", got[0].Time, got[2].Time)
	}
	if res.State != Seen || res.Samples != 2 || res.Failures != 1 || res.SMIPath == "" {
		t.Errorf("result = %+v, want seen, 2 samples, 1 failure", res)
	}
}

func TestSamplerNoGPU(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T)
		calls bool
	}{
		{"no nvidia-smi on PATH", noSMI, false},
		{"no device listed", func(t *testing.T) { fakeSMI(t, "") }, true},
		{"always failing", func(t *testing.T) { fakeSMI(t, "exit 1: driver not loaded") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(t)
			var calls int
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := Sampler{Interval: time.Millisecond, OnSample: func(Sample) error {
				if calls++; calls == 2 {
					cancel()
				}
				return nil
			}}
			res, err := s.Run(ctx)
			if err != nil || res.State != NoGPU || res.Samples != 0 {
				t.Errorf("Run = %+v, %v; want state no-gpu and no error", res, err)
			}
			if (calls > 0) != tt.calls {
				t.Errorf("%d samples delivered, want some: %v", calls, tt.calls)
			}
		})
	}
}

func TestSamplerStopsHungQuery(t *testing.T) {
	fakeSMI(t, "hang")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	var calls int
	res, err := (&Sampler{OnSample: func(Sample) error { calls++; return nil }}).Run(ctx)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v to stop", took)
	}
	if err != nil || calls != 0 || res.Failures != 0 {
		t.Errorf("Run = %+v, %v with %d samples; a query cut short by the stop is no sample", res, err, calls)
	}
}

func TestSamplerCallbackError(t *testing.T) {
	fakeSMI(t, twoGPUs)
	boom := errors.New("ledger closed")
	s := Sampler{Interval: time.Millisecond, OnSample: func(Sample) error { return boom }}
	if _, err := s.Run(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Run = %v, want the callback's error", err)
	}
}
