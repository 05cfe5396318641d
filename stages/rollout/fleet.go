package rollout

import (
	"context"
	"errors"
	"slices"

	"github.com/rlgate/rlgate/ledger"
)

// DrainAfter is how many transport failures in a row drain an endpoint of
// a fleet: no new request goes to it, its requests in flight are
// abandoned and retried on the others. The last endpoint in use is never
// drained: its failures end episodes unfinished, as a single endpoint's
// do, so a fleet that has lost every server still ends failed rather than
// hangs or passes.
const DrainAfter = 5

// errDrained is why an attempt in flight on an endpoint being drained
// was cut short.
var errDrained = errors.New("abandoned: the endpoint was drained")

// EndpointStats is what one endpoint did for the command that ran the
// rollout: recorded in run.end, printed, and in the summary.
type EndpointStats struct {
	Endpoint string `json:"endpoint"` // as given, redacted
	// Requests counts the attempts sent to it, retries included; Failures
	// those that failed in transport (or were abandoned when it was
	// drained); Retries those that retried a request whose earlier attempt
	// had failed, here or on another endpoint.
	Requests int `json:"requests"`
	Failures int `json:"failures"`
	Retries  int `json:"retries"`
	// LatencyMS describes the time each attempt sent to it took, failed
	// ones included; nil when none was sent.
	LatencyMS *Spread `json:"latency_ms,omitempty"`
	// Drained is set when DrainAfter failures in a row took it out of
	// use; DrainError is the last of them.
	Drained    bool   `json:"drained,omitempty"`
	DrainError string `json:"drain_error,omitempty"`
}

// endpoint is one server of the client and what was sent to it.
type endpoint struct {
	given string // as given
	url   string // its completions route
	name  string // as records name it: redacted
	// stop ends when the endpoint is drained; halt ends it.
	stop context.Context
	halt context.CancelFunc

	// guarded by client.mu
	outstanding int // attempts in flight
	inARow      int // transport failures since its last answer
	latencies   []float64
	stats       EndpointStats
}

func newEndpoint(given string) *endpoint {
	stop, halt := context.WithCancel(context.Background())
	name := ledger.Redact("", given)
	return &endpoint{given: given, url: completionsURL(given), name: name, stop: stop, halt: halt, stats: EndpointStats{Endpoint: name}}
}

// pick chooses the endpoint of an attempt: of those in use, the one with
// the fewest attempts in flight, the first given on a tie, preferring one
// this request has not failed on. Each request is routed on its own, so
// an episode's turns may be answered by different servers of the fleet,
// which serve the same model.
func (c *client) pick(failedOn []*endpoint, retry bool) *endpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *endpoint
	for _, fresh := range []bool{true, false} {
		for _, e := range c.endpoints {
			if e.stats.Drained || (fresh && slices.Contains(failedOn, e)) {
				continue
			}
			if best == nil || e.outstanding < best.outstanding {
				best = e
			}
		}
		if best != nil {
			break
		}
	}
	// best is set: the last endpoint in use is never drained.
	best.outstanding++
	best.stats.Requests++
	if retry {
		best.stats.Retries++
	}
	return best
}

// settle counts an attempt sent to e that took ms; failed marks a
// transport failure, err. The DrainAfter-th failure in a row drains e
// unless it is the last endpoint in use.
func (c *client) settle(e *endpoint, ms float64, err error, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.outstanding--
	e.latencies = append(e.latencies, ms)
	if !failed {
		e.inARow = 0
		return
	}
	e.stats.Failures++
	e.inARow++
	if e.stats.Drained || e.inARow < DrainAfter || c.inUse() == 1 {
		return
	}
	e.stats.Drained, e.stats.DrainError = true, c.recordable(err)
	e.halt()
	if c.drained != nil {
		c.drained(e.stats, c.inUse())
	}
}

// abandon forgets an attempt cut short by the end of the run's context.
func (c *client) abandon(e *endpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.outstanding--
}

// charged counts the failed attempts of a request that count against
// MaxAttempts: those on endpoints still in use.
func (c *client) charged(failedOn []*endpoint) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range failedOn {
		if !e.stats.Drained {
			n++
		}
	}
	return n
}

// inUse counts the endpoints not drained; c.mu is held.
func (c *client) inUse() int {
	n := 0
	for _, e := range c.endpoints {
		if !e.stats.Drained {
			n++
		}
	}
	return n
}

// stats returns each endpoint's counts, in the order given.
func (c *client) stats() []EndpointStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]EndpointStats, len(c.endpoints))
	for i, e := range c.endpoints {
		out[i] = e.stats
		out[i].LatencyMS = spreadOf(e.latencies)
	}
	return out
}
