package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// ClientOptions bound how rollout talks to the endpoint. A zero field
// takes its value from DefaultClientOptions.
type ClientOptions struct {
	// RequestTimeout bounds one attempt, from sending to the last byte.
	RequestTimeout time.Duration
	// MaxAttempts is how many times a request is sent before the episode
	// ends with StopTransport; of a fleet, attempts that failed on an
	// endpoint drained since do not count.
	MaxAttempts int
	// Backoff is the wait before the first retry; it doubles up to
	// MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// DefaultClientOptions: 5 minutes per attempt, 4 attempts, waits of 0.5,
// 1 and 2 s between them (at most 8 s).
func DefaultClientOptions() ClientOptions {
	return ClientOptions{RequestTimeout: 5 * time.Minute, MaxAttempts: 4, Backoff: 500 * time.Millisecond, MaxBackoff: 8 * time.Second}
}

func (o ClientOptions) withDefaults() ClientOptions {
	d := DefaultClientOptions()
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = d.RequestTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = d.MaxAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = d.Backoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	return o
}

// clientRecord is how the options are recorded in a run's start entry.
type clientRecord struct {
	RequestTimeoutMS int64 `json:"request_timeout_ms"`
	MaxAttempts      int   `json:"max_attempts"`
	BackoffMS        int64 `json:"backoff_ms"`
	MaxBackoffMS     int64 `json:"max_backoff_ms"`
}

func (o ClientOptions) record() clientRecord {
	return clientRecord{RequestTimeoutMS: o.RequestTimeout.Milliseconds(), MaxAttempts: o.MaxAttempts,
		BackoffMS: o.Backoff.Milliseconds(), MaxBackoffMS: o.MaxBackoff.Milliseconds()}
}

// Attempt is one try of a request that did not give a usable reply: the
// status (0 when no response came), the response body and what was wrong.
type Attempt struct {
	Status    int     `json:"status"`
	Response  Body    `json:"response,omitempty"`
	Error     string  `json:"error"`
	LatencyMS float64 `json:"latency_ms"`
	// Endpoint is, in a run with several endpoints, the one the attempt
	// went to, redacted.
	Endpoint string `json:"endpoint,omitempty"`
}

// exchange is the outcome of one request with its retries: the last
// attempt's status and body, parsed when usable.
type exchange struct {
	status    int
	body      []byte
	resp      *ChatResponse
	failed    []Attempt // retried attempts before the last
	err       error     // set when the last attempt gave no usable reply too, or a 4xx answered
	transient bool      // with err: the last attempt failed in transport (see attempt), not on a final 4xx
	duration  time.Duration
	endpoint  string // of a fleet: the endpoint of the last attempt, redacted
}

// client speaks /v1/chat/completions with retries, to one endpoint or to
// a fleet of them (fleet.go says how a request finds its endpoint).
type client struct {
	endpoints []*endpoint
	apiKey    string
	opts      ClientOptions
	http      *http.Client
	// drained, when not nil, hears of each endpoint drained and how many
	// are left.
	drained func(EndpointStats, int)
	// mask masks what the client knows to be secret (the API key, the
	// endpoints' credentials and secret query values) and what the
	// redaction rule finds, in everything recorded or printed: a server
	// may echo the request's headers and URL in its reply.
	mask *ledger.Masker

	mu sync.Mutex // guards the endpoints' counters
}

// completionsURL accepts a server root ("http://h:8000"), its OpenAI base
// ("http://h:8000/v1") or the full path. The route goes on the path, so a
// query the endpoint carries (a gateway's api_key) stays a query.
func completionsURL(endpoint string) string { return route(endpoint, "/chat/completions") }

// modelsURL is the models route beside the completions route.
func modelsURL(endpoint string) string { return route(endpoint, "/models") }

func route(endpoint, name string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint // the request reports the parse error
	}
	p := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions")
	if !strings.HasSuffix(p, "/v1") {
		p += "/v1"
	}
	u.Path, u.RawPath = p+name, ""
	return u.String()
}

func newClient(endpoints []string, apiKey string, opts ClientOptions, conns int) *client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // keep the bodies byte for byte as the server sent them
	}
	var red ledger.Redactor
	red.Value("", "API_KEY", apiKey)
	c := &client{apiKey: apiKey, opts: opts, http: &http.Client{Transport: tr}}
	for _, e := range endpoints {
		red.Value("", "", e)
		c.endpoints = append(c.endpoints, newEndpoint(e))
	}
	c.mask = red.Masker()
	return c
}

func (c *client) close() {
	c.http.CloseIdleConnections()
	for _, e := range c.endpoints {
		e.halt()
	}
}

// fleet reports whether the client has several endpoints; records then
// name the endpoint of each attempt.
func (c *client) fleet() bool { return len(c.endpoints) > 1 }

// probe checks every endpoint, all at once, before any episode, and
// returns the model identity each reported for model (nil: none; see
// reportedIdentity), in the order given. A fleet is used only when each
// of its endpoints passes: a server that is down before the run starts is
// a mistake in the list, not a failure to ride out.
func (c *client) probe(ctx context.Context, model string) ([]*ledger.Digest, error) {
	errs := make([]error, len(c.endpoints))
	ids := make([]*ledger.Digest, len(c.endpoints))
	var wg sync.WaitGroup
	for i, e := range c.endpoints {
		wg.Go(func() { ids[i], errs[i] = c.probeOne(ctx, e, model) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	switch {
	case err == nil:
		return ids, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case !c.fleet():
		return nil, errs[0]
	}
	bad := 0
	for _, e := range errs {
		if e != nil {
			bad++
		}
	}
	return nil, fmt.Errorf("%d of %d endpoints failed the probe; each --endpoint must pass (drop one that cannot serve):\n%w", bad, len(errs), err)
}

// probeOne checks once that an endpoint can be used: GET <base>/models
// within RequestTimeout, with the API key. What it checks is the
// transport: any HTTP answer passes, 404 included (some servers have no
// models route), except 401 and 403 (the key is refused) and a 5xx (the
// server is not serving). Otherwise every episode would end on the same
// failure. A 200 reply is read for the model identity the endpoint
// reports.
func (c *client) probeOne(ctx context.Context, e *endpoint, model string) (*ledger.Digest, error) {
	url := modelsURL(e.given)
	shown := c.mask.String(url)
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		if c.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.apiKey)
		}
		var res *http.Response
		if res, err = c.http.Do(req); err == nil {
			reply, rerr := io.ReadAll(io.LimitReader(res.Body, maxModelsReply+1))
			res.Body.Close()
			switch {
			case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
				return nil, fmt.Errorf("%w: GET %s: status %d. Try: --api-key-env VAR naming a key the server accepts", ErrEndpoint, shown, res.StatusCode)
			case res.StatusCode >= 500:
				return nil, fmt.Errorf("%w: GET %s: status %d. Try: wait until the server serves the model, then run again", ErrEndpoint, shown, res.StatusCode)
			case res.StatusCode != http.StatusOK || rerr != nil || len(reply) > maxModelsReply:
				return nil, nil
			}
			return reportedIdentity(e.name, reply, model)
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("%w: %s. Try: --endpoint http://HOST:PORT/v1 of a running OpenAI-compatible server", ErrEndpoint, c.recordable(err))
}

// names returns the endpoints as records name them (redacted), in the
// order given.
func (c *client) names() []string {
	out := make([]string, len(c.endpoints))
	for i, e := range c.endpoints {
		out[i] = e.name
	}
	return out
}

// recordable is an error as the ledger may keep it and the terminal show
// it: Go's HTTP errors quote the URL, credentials included, so it is
// masked.
func (c *client) recordable(err error) string { return c.mask.String(err.Error()) }

// errTransient marks a failed attempt worth retrying.
type errTransient struct{ error }

// do sends body until a usable reply comes, a 4xx answers, or MaxAttempts
// attempts have failed on endpoints still in use: a failure on an
// endpoint that was drained since is retried on another and not counted.
// It returns an error only when ctx ends: the episode is then abandoned,
// not recorded.
func (c *client) do(ctx context.Context, body []byte) (*exchange, error) {
	x := &exchange{}
	start := time.Now()
	wait := c.opts.Backoff
	var failedOn []*endpoint // the endpoint of each failed attempt
	for attempt := 1; ; attempt++ {
		e := c.pick(failedOn, attempt > 1)
		t0 := time.Now()
		status, resp, parsed, err := c.attempt(ctx, e, body)
		lat := millis(time.Since(t0))
		if ctx.Err() != nil {
			c.abandon(e)
			return nil, ctx.Err()
		}
		var tr errTransient
		x.transient = errors.As(err, &tr)
		c.settle(e, lat, err, x.transient)
		x.status, x.body = status, resp
		if c.fleet() {
			x.endpoint = e.name
		}
		if err == nil {
			x.resp = parsed
			x.duration = time.Since(start)
			return x, nil
		}
		if x.transient {
			failedOn = append(failedOn, e)
		}
		if !x.transient || c.charged(failedOn) >= c.opts.MaxAttempts {
			x.err = fmt.Errorf("attempt %d: %s", attempt, c.recordable(err))
			x.duration = time.Since(start)
			return x, nil
		}
		x.failed = append(x.failed, Attempt{Status: status, Response: resp, Error: c.recordable(err), LatencyMS: lat, Endpoint: x.endpoint})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, c.opts.MaxBackoff)
	}
}

// attempt sends the request once to e. Network errors, timeouts, 5xx, 429 and
// unreadable or malformed replies are transient; other non-2xx statuses
// are final.
func (c *client) attempt(ctx context.Context, e *endpoint, body []byte) (int, []byte, *ChatResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	ctx, drop := context.WithCancelCause(ctx)
	defer drop(nil)
	defer context.AfterFunc(e.stop, func() { drop(errDrained) })() // abandoned, to be retried elsewhere
	transient := func(err error) error {
		if context.Cause(ctx) == errDrained {
			return errTransient{errDrained}
		}
		return errTransient{err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, transient(fmt.Errorf("post %s: %w", e.url, err))
	}
	defer res.Body.Close()
	resp, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, resp, nil, transient(fmt.Errorf("read reply: %w", err))
	}
	switch {
	case res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests:
		return res.StatusCode, resp, nil, errTransient{fmt.Errorf("status %d", res.StatusCode)}
	case res.StatusCode < 200 || res.StatusCode > 299:
		return res.StatusCode, resp, nil, fmt.Errorf("status %d", res.StatusCode)
	}
	var parsed ChatResponse
	if err := json.Unmarshal(resp, &parsed); err != nil {
		return res.StatusCode, resp, nil, errTransient{fmt.Errorf("malformed reply: %w", err)}
	}
	if len(parsed.Choices) == 0 {
		return res.StatusCode, resp, nil, errTransient{errors.New("malformed reply: no choices")}
	}
	return res.StatusCode, resp, &parsed, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
