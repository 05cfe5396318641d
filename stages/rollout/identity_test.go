package rollout_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// Two model identities, as rlgate ckpt digest prints them.
var (
	identityA = ledger.Sum([]byte("checkpoint a"))
	identityB = ledger.Sum([]byte("checkpoint b"))
)

// modelsReporting is a models reply listing model with identity id, as
// rlgate serve-policy writes it.
func modelsReporting(model string, id ledger.Digest) string {
	return fmt.Sprintf(`{"object": "list", "data": [{"id": %q, "object": "model", "owned_by": "rlgate", "identity": %q}]}`, model, id)
}

// vllmModels is the models reply of a vLLM server (0.6): no identity.
const vllmModels = `{"object":"list","data":[{"id":"scripted","object":"model","created":1733000000,"owned_by":"vllm","root":"/models/rl2","parent":null,"max_model_len":16384,"permission":[{"id":"modelperm-1","object":"model_permission","created":1733000000,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}]}]}`

// TestRolloutAsksTheEndpointWhichModel: the endpoints' models routes
// decide the recorded identity and its source; an endpoint serving
// another model than the one asserted, or a fleet serving two, is refused
// before anything is recorded.
func TestRolloutAsksTheEndpointWhichModel(t *testing.T) {
	type want struct {
		Identity *ledger.Digest
		Source   string
	}
	a, b := identityA, identityB
	for _, c := range []struct {
		name     string
		models   []string // each endpoint's models reply; "" the scripted default (no identity), "404" none at all
		asserted *ledger.Digest
		want     want
		err      error    // when refused
		says     []string // in the refusal
	}{
		{name: "reported", models: []string{modelsReporting("scripted", a)}, want: want{&a, rollout.IdentityServer}},
		{name: "reported-and-asserted", models: []string{modelsReporting("scripted", a)}, asserted: &a, want: want{&a, rollout.IdentityServer}},
		{name: "other-name", models: []string{modelsReporting("rlgate-refpolicy", a)}, want: want{&a, rollout.IdentityServer}},
		{name: "mismatch", models: []string{modelsReporting("scripted", a)}, asserted: &b, err: rollout.ErrIdentity,
			says: []string{"serves model " + a.String(), "--model-identity names " + b.String(), "Try: --model-identity " + a.String()}},
		{name: "none-asserted", models: []string{""}, asserted: &a, want: want{&a, rollout.IdentityAsserted}},
		{name: "vllm-asserted", models: []string{vllmModels}, asserted: &a, want: want{&a, rollout.IdentityAsserted}},
		{name: "404-asserted", models: []string{"404"}, asserted: &a, want: want{&a, rollout.IdentityAsserted}},
		{name: "not-json", models: []string{"<html>models</html>"}, asserted: &a, want: want{&a, rollout.IdentityAsserted}},
		{name: "none", models: []string{vllmModels}, want: want{}},
		{name: "named-of-two", models: []string{`{"data": [{"id": "other", "identity": "` + b.String() + `"}, {"id": "scripted", "identity": "` + a.String() + `"}]}`},
			want: want{&a, rollout.IdentityServer}},
		{name: "two-unnamed", models: []string{`{"data": [{"id": "x", "identity": "` + a.String() + `"}, {"id": "y", "identity": "` + b.String() + `"}]}`},
			err: rollout.ErrIdentity, says: []string{"serves models of different identities", a.String(), b.String(), "Try: --model"}},
		{name: "malformed", models: []string{`{"data": [{"id": "scripted", "identity": "sha256:00"}]}`}, asserted: &a, err: rollout.ErrEndpoint,
			says: []string{`reports model identity "sha256:00"`, "not blake3:HEX"}},
		{name: "not-a-string", models: []string{`{"data": [{"id": "scripted", "identity": 7}]}`}, err: rollout.ErrEndpoint, says: []string{"reports model identity 7"}},
		{name: "fleet", models: []string{modelsReporting("scripted", a), modelsReporting("scripted", a)}, want: want{&a, rollout.IdentityServer}},
		{name: "fleet-of-two-models", models: []string{modelsReporting("scripted", a), modelsReporting("scripted", b)}, asserted: &a, err: rollout.ErrIdentity,
			says: []string{"serves model " + a.String(), "serves " + b.String(), "a fleet serves one checkpoint"}},
		{name: "fleet-half-silent", models: []string{modelsReporting("scripted", a), vllmModels}, err: rollout.ErrIdentity,
			says: []string{"reports no model identity", "Try: --model-identity " + a.String()}},
		{name: "fleet-half-silent-asserted", models: []string{vllmModels, modelsReporting("scripted", a)}, asserted: &a, want: want{&a, rollout.IdentityAsserted}},
		{name: "fleet-half-silent-other", models: []string{vllmModels, modelsReporting("scripted", a)}, asserted: &b, err: rollout.ErrIdentity},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := ledgertest.New(t)
			var urls []string
			for _, m := range c.models {
				srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
				switch m {
				case "":
				case "404":
					srv.HideModels()
				default:
					srv.ReportModels(m)
				}
				urls = append(urls, srv.URL)
			}
			o := fleetOptions(t, c.name, 2, urls...)
			o.ModelIdentity = c.asserted
			before, err := l.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rollout.Play(ctx, l, o)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, want %v", err, c.err)
				}
				for _, s := range c.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("the refusal does not say %q: %v", s, err)
					}
				}
				if head, err := l.Head(ctx); err != nil || head.Seq != before.Seq {
					t.Errorf("refused, yet the ledger grew from entry %d to %d (%v)", before.Seq, head.Seq, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := rollout.ReadStart(ctx, l, c.name)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, want{st.ModelIdentity, st.IdentitySource}); d != "" {
				t.Errorf("recorded identity (-want +got):\n%s", d)
			}
		})
	}
}

// TestResumeKeepsTheModel: a failed run that recorded an identity is not
// resumed against a server of another model, nor without any identity;
// against the same model it is.
func TestResumeKeepsTheModel(t *testing.T) {
	l := ledgertest.New(t)
	down := rollouttest.New(t, func(*rollouttest.Request) rollouttest.Reply { return rollouttest.Reply{Status: 503} })
	down.ReportModels(modelsReporting("scripted", identityA))
	o := options(t, "resumed", down.URL, 2)
	o.Client.MaxAttempts = 1
	if s, err := rollout.Play(ctx, l, o); !errors.Is(err, rollout.ErrIncomplete) || s.Status != "failed" {
		t.Fatalf("%v, %+v", err, s)
	}
	head, err := l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	other.ReportModels(modelsReporting("scripted", identityB))
	silent := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	for _, url := range []string{other.URL, silent.URL} {
		o.Endpoint = url
		_, err := rollout.Play(ctx, l, o)
		if !errors.Is(err, rollout.ErrIdentity) || !strings.Contains(err.Error(), "recorded model identity "+identityA.String()+" (server)") {
			t.Errorf("resume against %s: %v", url, err)
		}
		if now, err := l.Head(ctx); err != nil || now.Seq != head.Seq {
			t.Errorf("refused resume wrote entries %d..%d (%v)", head.Seq+1, now.Seq, err)
		}
	}
	same := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	same.ReportModels(modelsReporting("scripted", identityA))
	o.Endpoint = same.URL
	if s, err := rollout.Play(ctx, l, o); err != nil || s.Status != "ok" || !s.Resumed {
		t.Fatalf("resume against the same model: %v, %+v", err, s)
	}
}

// TestReplayReportsOnlyServerIdentity: serve-replay's models route passes
// on a run's identity the server reported, so a rollout against it with
// another --model-identity is refused; an identity the user only asserted
// is not passed on as confirmed.
func TestReplayReportsOnlyServerIdentity(t *testing.T) {
	l := ledgertest.New(t)
	reporting := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	reporting.ReportModels(modelsReporting("scripted", identityA))
	if _, err := rollout.Play(ctx, l, options(t, "served", reporting.URL, 2)); err != nil {
		t.Fatal(err)
	}
	silent := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	asserted := options(t, "asserted", silent.URL, 2)
	asserted.ModelIdentity = &identityA
	if _, err := rollout.Play(ctx, l, asserted); err != nil {
		t.Fatal(err)
	}
	replay := func(run string) string {
		rp, err := rollout.NewReplay(ctx, l, run)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(rp)
		t.Cleanup(srv.Close)
		return srv.URL
	}

	o := options(t, "again", replay("served"), 2)
	o.ModelIdentity = &identityB
	if _, err := rollout.Play(ctx, l, o); !errors.Is(err, rollout.ErrIdentity) {
		t.Errorf("replay of a server-reported run with another identity: %v", err)
	}
	o.ModelIdentity = nil
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	o = options(t, "again-asserted", replay("asserted"), 2)
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	for run, want := range map[string]string{"again": rollout.IdentityServer, "again-asserted": ""} {
		st, err := rollout.ReadStart(ctx, l, run)
		if err != nil {
			t.Fatal(err)
		}
		if st.Source() != want {
			t.Errorf("rollout %s against the replay recorded identity %v (%q), want source %q", run, st.ModelIdentity, st.Source(), want)
		}
	}
}
