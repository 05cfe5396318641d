package rollout_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// TestSummaryDescribesTokensAndLatency: each of five tasks is answered in
// one turn with scripted usage, so the tokens per episode are known; the
// expected spreads are NumPy's (1.24, default linear method):
//
//	out = [10, 20, 30, 40, 100]: mean 40, np.percentile(out, [50, 95]) → 30, 88
//	in  = [7, 7, 9, 9, 9]:       mean 8.2, np.percentile(in, [50, 95]) → 9, 9
//
// Latency is timing, so only its count (one request per episode played
// now) and order are checked; a run found complete plays none.
func TestSummaryDescribesTokensAndLatency(t *testing.T) {
	in, out := []int{7, 7, 9, 9, 9}, []int{10, 20, 30, 40, 100}
	o := options(t, "spread", "", 5)
	index := map[string]int{}
	for i, tk := range o.Tasks {
		index[tk.ID] = i
	}
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		i := index[r.TaskID]
		return rollouttest.Reply{Content: "<think>known</think>\n<solution>SELECT 1", Usage: &rollout.Usage{PromptTokens: in[i], CompletionTokens: out[i]}}
	})
	o.Endpoint = srv.URL
	l := ledgertest.New(t)
	s, err := rollout.Play(ctx, l, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []*rollout.Spread{{N: 5, Mean: 8.2, P50: 9, P95: 9}, {N: 5, Mean: 40, P50: 30, P95: 88}}
	if diff := cmp.Diff(want, []*rollout.Spread{s.TokensInPerEpisode, s.TokensOutPerEpisode}, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("tokens in, out per episode (-numpy +got):\n%s", diff)
	}
	if lat := s.RequestLatencyMS; lat == nil || lat.N != 5 || lat.P50 > lat.P95 {
		t.Errorf("request latency %+v, want 5 requests timed", lat)
	}

	again, err := rollout.Play(ctx, l, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != "complete" || again.RequestLatencyMS != nil {
		t.Errorf("complete run: status %s, latency %+v; want no request timed", again.Status, again.RequestLatencyMS)
	}
	if diff := cmp.Diff(want[1], again.TokensOutPerEpisode, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("complete run: tokens out per episode (-numpy +got):\n%s", diff)
	}
}
