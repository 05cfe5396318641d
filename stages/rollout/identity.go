package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// Where a rollout's model identity came from, as Start.IdentitySource
// records it.
const (
	// IdentityServer: every endpoint reported the identity on its models
	// route, and the user's, when given, is the same.
	IdentityServer = "server"
	// IdentityAsserted: the user gave it (--model-identity) and no
	// endpoint confirmed it. Bodies recorded before the source was
	// recorded read so.
	IdentityAsserted = "asserted"
)

// maxModelsReply bounds the models reply the probe reads: a list of
// models is a few kilobytes; a longer one is not read for an identity.
const maxModelsReply = 1 << 20

// reportedIdentity is the model identity one endpoint reported for
// model on its models route (GET <base>/models), from a reply of at most
// maxModelsReply bytes; nil when it reported none. rlgate's own servers
// (serve-policy, serve-replay) put it in the "identity" field of the
// model's entry, as the OpenAI list carries no such field: vLLM, SGLang
// and llama.cpp report none, and a reply that is not an OpenAI model list
// (a 404 page) reports none either. The entry whose id is model is read;
// when none is, the identity every entry that reports one agrees on. An
// identity that is not blake3:HEX, or entries that disagree without one
// named model, are refused: the endpoint claims something that cannot be
// checked.
func reportedIdentity(endpoint string, reply []byte, model string) (*ledger.Digest, error) {
	var list struct {
		Data []modelEntry `json:"data"`
	}
	if json.Unmarshal(reply, &list) != nil {
		return nil, nil
	}
	named := slices.IndexFunc(list.Data, func(m modelEntry) bool { return m.ID == model })
	entries := list.Data
	if named >= 0 {
		entries = entries[named : named+1]
	}
	var found *ledger.Digest
	var seen []string
	for _, m := range entries {
		if len(m.Identity) == 0 || string(m.Identity) == "null" {
			continue
		}
		var s string
		d, err := ledger.Digest{}, json.Unmarshal(m.Identity, &s)
		if err == nil {
			d, err = ledger.ParseDigest(s)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: endpoint %s reports model identity %.80s for model %q, not blake3:HEX. Try: --endpoint of a server that reports the checkpoint's identity (rlgate serve-policy), or one that reports none",
				ErrEndpoint, endpoint, m.Identity, m.ID)
		}
		seen = append(seen, fmt.Sprintf("%s for %q", d, m.ID))
		if found != nil && *found != d {
			return nil, fmt.Errorf("%w: endpoint %s serves models of different identities (%s) and none is --model %q. Try: --model naming the one to evaluate",
				ErrIdentity, endpoint, strings.Join(seen, ", "), model)
		}
		found = &d
	}
	return found, nil
}

// modelEntry is one model of an OpenAI model list, with the identity
// rlgate's servers add.
type modelEntry struct {
	ID       string          `json:"id"`
	Identity json.RawMessage `json:"identity"`
}

// resolveIdentity decides the identity a rollout records and its source,
// from the user's assertion (nil when not given) and what each endpoint
// reported (names and reported in the same order; nil: none). Every
// endpoint that reports one must report the same, and it must be the
// asserted one when that is given; a fleet in which some endpoints report
// an identity and others none needs the assertion, since nothing confirms
// what the silent ones serve. Nothing reported: the assertion, asserted.
// Neither: no identity (nil, "").
func resolveIdentity(asserted *ledger.Digest, names []string, reported []*ledger.Digest) (*ledger.Digest, string, error) {
	by := -1 // the first endpoint that reported one
	silent := ""
	for i, d := range reported {
		switch {
		case d == nil:
			if silent == "" {
				silent = names[i]
			}
		case by < 0:
			by = i
		case *d != *reported[by]:
			return nil, "", fmt.Errorf("%w: endpoint %s serves model %s, endpoint %s serves %s: a fleet serves one checkpoint. Try: --endpoint only servers of the checkpoint to evaluate",
				ErrIdentity, names[by], reported[by], names[i], d)
		}
	}
	switch {
	case by < 0 && asserted == nil:
		return nil, "", nil
	case by < 0:
		return asserted, IdentityAsserted, nil
	case asserted != nil && *asserted != *reported[by]:
		return nil, "", fmt.Errorf("%w: endpoint %s serves model %s, but --model-identity names %s. Try: --model-identity %s, or --endpoint of a server of %s",
			ErrIdentity, names[by], reported[by], asserted, reported[by], asserted)
	case silent != "" && asserted == nil:
		return nil, "", fmt.Errorf("%w: endpoint %s serves model %s, endpoint %s reports no model identity, so nothing confirms it serves the same. Try: --model-identity %s to assert it, or leave %s out",
			ErrIdentity, names[by], reported[by], silent, reported[by], silent)
	case silent != "":
		return asserted, IdentityAsserted, nil
	}
	return reported[by], IdentityServer, nil
}

// sameIdentity refuses to resume a run that recorded a model identity
// with another one: the episodes played now would be of another model.
func sameIdentity(prev *Start, id *ledger.Digest, source string) error {
	if prev.ModelIdentity == nil || (id != nil && *id == *prev.ModelIdentity) {
		return nil
	}
	now := "none is given or reported now"
	if id != nil {
		now = fmt.Sprintf("now %s (%s)", id, source)
	}
	return fmt.Errorf("%w: the run recorded model identity %s (%s), %s. Try: the --model-identity and --endpoint the run started with, or another --run",
		ErrIdentity, prev.ModelIdentity, prev.Source(), now)
}

// Source returns where the start's model identity came from:
// IdentityServer or IdentityAsserted (also for bodies that predate the
// field); "" when it recorded none.
func (s *Start) Source() string {
	switch {
	case s.ModelIdentity == nil:
		return ""
	case s.IdentitySource == IdentityServer:
		return IdentityServer
	}
	return IdentityAsserted
}
