// Package stage records the stages of an experiment that rlgate does not
// play itself: a trainer run through the ledger (rlgate run, with the
// publish request of --publish-to when it succeeds), a run a tracker
// recorded elsewhere (rlgate import-run), and the metric series either
// left in the ledger (rlgate metrics).
package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/usage"
)

// Publish asks for a stage's output checkpoint to be published once a
// gate passes for its model identity (rlgate run --publish-to).
type Publish struct {
	To, Key string
}

// Result is what rlgate run --json prints: the stage's result and the
// publish request recorded with it.
type Result struct {
	*runner.Result
	PublishRequest *PublishRequested `json:"publish_request,omitempty"`
}

// PublishRequested is a publish request recorded for a stage that
// succeeded.
type PublishRequested struct {
	Seq           int64         `json:"seq"`
	To            string        `json:"to"`
	ModelIdentity ledger.Digest `json:"model_identity"`
}

// Run runs spec's stage through the ledger in dir (runner.Execute) and,
// when pub is set and the stage succeeded, records the publish request
// (publish.RecordRequest). pub's directory and key are checked before the
// stage starts, so a request that could not be honoured costs no training.
// A stage that failed is a result, not an error: its status says so.
func Run(ctx context.Context, dir string, spec runner.Spec, pub *Publish) (*Result, error) {
	var req *publish.Request
	if pub != nil {
		r, err := publish.CheckRequest(pub.To, pub.Key)
		if err != nil {
			return nil, fmt.Errorf("--publish-to: %w", err)
		}
		req = &r
	}
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	res, err := runner.Execute(ctx, l, spec)
	if err != nil {
		return nil, err
	}
	r := &Result{Result: res}
	if req != nil && res.Status == records.StatusOK {
		e, id, err := publish.RecordRequest(ctx, l, res.Run, *req)
		if err != nil {
			return r, fmt.Errorf("--publish-to: %w", err)
		}
		r.PublishRequest = &PublishRequested{Seq: e.Seq, To: req.To, ModelIdentity: id}
	}
	return r, nil
}

// Import records the tracker run spec names in the ledger in dir
// (runner.Import). A run the tracker did not see end well is a result of
// status failed, not an error.
func Import(ctx context.Context, dir string, spec runner.ImportSpec) (*runner.Result, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	res, err := runner.Import(ctx, l, spec)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("import-run %s: %w. Try: the path of a run directory or file, e.g. wandb/run-<date>-<id>", spec.Source.Path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("import-run %s: %w", spec.Source.Path, err)
	}
	return res, nil
}

// Metrics reads the series of run's metric keys (every key the run
// recorded when keys is empty) from the ledger in dir, in step order; a
// key the run never recorded is an error naming it.
func Metrics(ctx context.Context, dir, run string, keys []string) (map[string][]ledger.MetricPoint, []string, error) {
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	if _, err := l.RunStatus(ctx, run); err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, nil, fmt.Errorf("metrics: no run %q in the ledger. Try: rlgate runs", run)
		}
		return nil, nil, err
	}
	if len(keys) == 0 {
		if keys, err = l.MetricKeys(ctx, run); err != nil {
			return nil, nil, err
		}
	}
	series := map[string][]ledger.MetricPoint{}
	for _, k := range keys {
		pts, _, err := l.Series(ctx, run, k)
		if err != nil {
			return nil, nil, err
		}
		if len(pts) == 0 {
			return nil, nil, fmt.Errorf("metrics: run %s recorded no key %q. Try: rlgate metrics --run %s (all keys)", run, k, run)
		}
		series[k] = pts
	}
	return series, keys, nil
}

// Args are what rlgate run and import-run take of a stage as text: its
// inputs and outputs as NAME=PATH and, for run, its params as KEY=VALUE,
// metrics files as FILE[:FORMAT] and GPU telemetry, auto or off.
type Args struct {
	In, Out, Params, Metrics []string
	GPU                      string
}

// Paths parses the inputs and outputs; one that is not NAME=PATH with a
// valid name is a usage.Error.
func (a Args) Paths() (in, out []runner.Named, err error) {
	if in, err = namedPaths("in", a.In); err == nil {
		out, err = namedPaths("out", a.Out)
	}
	return in, out, err
}

// Spec is spec with the inputs, outputs, params, metrics files and GPU
// telemetry of a; a value that does not parse is a usage.Error.
func (a Args) Spec(spec runner.Spec) (runner.Spec, error) {
	var err error
	if spec.Inputs, spec.Outputs, err = a.Paths(); err != nil {
		return spec, err
	}
	if len(a.Params) > 0 {
		spec.Params = map[string]string{}
		for _, p := range a.Params {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return spec, usage.Errorf("--param %q: want KEY=VALUE", p)
			}
			spec.Params[k] = v
		}
	}
	for _, m := range a.Metrics {
		path, format, err := metrics.ParseSpec(m)
		if err != nil {
			return spec, usage.Errorf("--metrics %q: %v", m, err)
		}
		spec.Metrics = append(spec.Metrics, runner.MetricFile{Path: path, Format: format})
	}
	switch a.GPU {
	case "auto":
		spec.GPU = true
	case "off":
	default:
		return spec, usage.Errorf("--gpu %q: want auto or off", a.GPU)
	}
	return spec, nil
}

func namedPaths(flag string, vals []string) ([]runner.Named, error) {
	var out []runner.Named
	for _, v := range vals {
		k, p, ok := strings.Cut(v, "=")
		if !ok || k == "" || p == "" {
			return nil, usage.Errorf("--%s %q: want NAME=PATH", flag, v)
		}
		if err := ledger.CheckName(k); err != nil {
			return nil, usage.Errorf("--%s: name %q %v", flag, k, err)
		}
		out = append(out, runner.Named{Name: k, Path: p})
	}
	return out, nil
}
