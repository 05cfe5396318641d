package rollout_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/rollout"
)

// TestSamplingOverride: values given beside the protocol replace its
// sampling, fields not given keep the protocol's, and an override that
// makes the protocol invalid is refused.
func TestSamplingOverride(t *testing.T) {
	n, temp, seed := 4, 0.7, int64(11)
	p := rollout.DefaultProtocol()
	if err := (rollout.SamplingOverride{N: &n, Temperature: &temp, Seed: &seed}).Apply(&p); err != nil {
		t.Fatal(err)
	}
	want := rollout.DefaultProtocol().Sampling
	want.N, want.Temperature, want.Seed = 4, 0.7, 11
	if diff := cmp.Diff(want, p.Sampling); diff != "" {
		t.Errorf("sampling (-want +got):\n%s", diff)
	}
	zero := 0
	p = rollout.DefaultProtocol()
	if err := (rollout.SamplingOverride{N: &zero}).Apply(&p); !errors.Is(err, rollout.ErrProtocol) {
		t.Errorf("n = 0: %v, want %v", err, rollout.ErrProtocol)
	}
}
