package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlgate/rlgate/gpu"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/metrics"
)

// Named is a declared input or output: a name the pipeline uses and a path.
type Named struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Spec is one stage to run through the ledger.
type Spec struct {
	Stage   string
	Run     string   // run id; empty: <stage>-<UTC time>-<4 hex>
	Argv    []string // run as is: no shell unless Argv names one
	Dir     string   // working directory; empty: the current one
	Inputs  []Named
	Outputs []Named
	Params  map[string]string
	Configs []string
	Metrics []MetricFile
	GPU     bool          // sample nvidia-smi while the stage runs
	Timeout time.Duration // 0: none
	Stdout  io.Writer     // the terminal; nil: output goes only to the ledger
	Stderr  io.Writer
	// FlushEvery is how often output and metrics go to the ledger while the
	// stage runs; 0 means DefaultFlush.
	FlushEvery  time.Duration
	GPUInterval time.Duration // 0: gpu.DefaultInterval
	Environ     []string      // nil: os.Environ()
	// SkipPreflight starts the stage without the pre-flight check of its
	// training data (Preflight); run.start records that it was skipped.
	SkipPreflight bool
	// CodeDir is the git work tree whose state run.start records as the
	// code version; empty: Dir. A reproduction runs in a scratch directory
	// but with the code of the directory the stage was recorded in.
	CodeDir string
}

// DefaultFlush bounds what a crash of rlgate itself can lose.
const DefaultFlush = 2 * time.Second

// killGrace is how long a stage has to exit after SIGTERM (timeout or an
// interrupt) before it is killed.
const killGrace = 10 * time.Second

// StartBody is the body of a stage's run.start entry. Repro compares Argv,
// Params, Inputs and Configs with a later invocation.
type StartBody struct {
	ledger.RunStart
	Argv     []string                 `json:"argv"`
	Dir      string                   `json:"dir"`
	Params   map[string]string        `json:"params,omitempty"`
	Inputs   map[string]ledger.Digest `json:"inputs,omitempty"`
	Configs  map[string]ledger.Digest `json:"configs,omitempty"` // ConfigKey -> canonical digest
	Outputs  []Named                  `json:"outputs,omitempty"`
	Metrics  []MetricFile             `json:"metrics,omitempty"`
	Code     CodeVersion              `json:"code"`
	Env      map[string]string        `json:"env"`
	Host     Host                     `json:"host"`
	TimeoutS float64                  `json:"timeout_s,omitempty"`
	PID      int                      `json:"pid"`
	// SkipPreflight: the stage was started without its pre-flight check.
	SkipPreflight bool `json:"skip_preflight,omitempty"`
	// Redacted names the values the redaction rule replaced ("argv[3]",
	// "env.HF_TOKEN", "params.api_key"), sorted.
	Redacted []string `json:"redacted,omitempty"`
}

// recordedCommand returns spec's argv and params as run.start records
// them: through ledger's redaction rule, noted in r.
func recordedCommand(r *ledger.Redactor, spec Spec) ([]string, map[string]string) {
	argv := r.Argv("argv", spec.Argv)
	var params map[string]string
	if spec.Params != nil {
		params = make(map[string]string, len(spec.Params))
		for k, v := range spec.Params {
			params[k] = r.Value("params."+k, k, v)
		}
	}
	return argv, params
}

// RecordedCommand returns spec's argv and params as run.start records them,
// so that repro compares a stage with its last run like for like. A change
// in a redacted value is therefore not seen.
func RecordedCommand(spec Spec) ([]string, map[string]string) {
	return recordedCommand(new(ledger.Redactor), spec)
}

// EndBody is the body of a stage's run.end entry.
type EndBody struct {
	ledger.RunEnd
	Reason       string                   `json:"reason,omitempty"`
	Signal       string                   `json:"signal,omitempty"`
	DurationS    float64                  `json:"duration_s"`
	Outputs      map[string]ledger.Digest `json:"outputs,omitempty"`
	MetricPoints int64                    `json:"metric_points"`
	LogBytes     map[string]int64         `json:"log_bytes"`
	GPU          *gpu.Summary             `json:"gpu,omitempty"`
	GPUState     gpu.State                `json:"gpu_state,omitempty"`

	// MetricFindings are the problems found in the metrics files (a parse
	// error, a file never written, keys written twice): recorded for the
	// training audit, never a change to the stage's status.
	MetricFindings []string `json:"metric_findings,omitempty"`
	// MetricFormats maps each metrics file that was read to the format it
	// was read as: the one declared, or the one detected for a file
	// declared without one or as auto.
	MetricFormats map[string]metrics.Format `json:"metric_formats,omitempty"`
	// MetricRuns maps each tracker run read as metrics (wandb, swanlab,
	// mlflow) to what the tracker recorded about it: identity, times and
	// end state, which need not be the stage's own.
	MetricRuns map[string]ImportedRun `json:"metric_runs,omitempty"`
	// MetricPriorFiles says, of each metrics file that was there before
	// the stage started, how it was read (priorFile): whole, when the stage
	// left it alone; from where the stage's bytes start, when it appended;
	// from the start, when it rewrote or replaced it.
	MetricPriorFiles map[string]string `json:"metric_prior_files,omitempty"`

	ownExit bool // failed because the stage itself exited non-zero
}

// Result is what Run reports.
type Result struct {
	Run      string `json:"run"`
	Stage    string `json:"stage"`
	StartSeq int64  `json:"start_seq"`
	EndSeq   int64  `json:"end_seq"`
	// Preflight is the stage's pre-flight check and PreflightSeq its
	// entry; nil when the stage read no imported dataset or skipped it.
	Preflight    *Preflight `json:"preflight,omitempty"`
	PreflightSeq int64      `json:"preflight_seq,omitempty"`
	EndBody
}

// Execute records and runs one stage: it hashes inputs and configs and records
// the code version, environment and host; checks, unless spec skips it,
// the training data's reward before the stage starts (Preflight), and
// fails the run without starting the stage when that check fails; runs the command, teeing its
// output into the ledger and ingesting metrics and GPU telemetry while it
// runs; then hashes outputs and closes the run. A stage that fails is
// recorded as failed and is not an error; an error means the ledger could
// not record the stage.
func Execute(ctx context.Context, l *ledger.Ledger, spec Spec) (*Result, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	// Recording must outlive an interrupt, which cancels ctx.
	rec := context.WithoutCancel(ctx)
	if spec.Run == "" {
		spec.Run = newRunID(spec.Stage)
	}
	if spec.Dir == "" {
		spec.Dir = "."
	}
	if spec.Environ == nil {
		spec.Environ = os.Environ()
	}
	if spec.FlushEvery <= 0 {
		spec.FlushEvery = DefaultFlush
	}

	var red ledger.Redactor
	start := StartBody{RunStart: ledger.RunStart{Stage: spec.Stage}, Outputs: spec.Outputs, Metrics: spec.Metrics,
		Env: captureEnv(&red, spec.Environ), TimeoutS: spec.Timeout.Seconds(), PID: os.Getpid(), SkipPreflight: spec.SkipPreflight}
	start.Argv, start.Params = recordedCommand(&red, spec)
	start.Redacted = red.Fields()
	start.Dir, _ = filepath.Abs(spec.Dir)
	arts, blobs, err := hashInputs(ctx, l, spec.Inputs, &start)
	if err != nil {
		return nil, err
	}
	if len(spec.Configs) > 0 {
		start.Configs = map[string]ledger.Digest{}
	}
	for _, c := range spec.Configs {
		a, bs, err := configArtifact(l, c, &red)
		if err != nil {
			return nil, err
		}
		start.Configs[ConfigKey(spec.Dir, c)] = a.canonicalDigest()
		arts, blobs = append(arts, a), append(blobs, bs...)
	}
	if start.Code, err = captureCode(ctx, l, cmp.Or(spec.CodeDir, spec.Dir), red.Masker()); err != nil {
		return nil, fmt.Errorf("record code version: %w", err)
	}
	start.Host = DescribeHost(ctx)
	var codeBlobs []ledger.Digest
	if start.Code.Diff != nil {
		codeBlobs = append(codeBlobs, *start.Code.Diff)
	}

	run, err := l.StartRun(rec, spec.Run, start, codeBlobs...)
	if err != nil {
		return nil, err
	}
	res := &Result{Run: spec.Run, Stage: spec.Stage, StartSeq: run.Seq}
	recs := make([]ledger.Record, len(arts))
	for i, a := range arts {
		var bs []ledger.Digest
		if a.Manifest != nil {
			bs = append(bs, *a.Manifest)
		}
		if a.Canonical != nil {
			bs = append(bs, *a.Canonical, a.Digest)
		}
		recs[i] = ledger.Record{Kind: records.KindArtifact, Run: spec.Run, Body: a, Blobs: bs}
	}
	if _, err := l.Append(rec, recs...); err != nil {
		return nil, err
	}

	began := time.Now()
	if err := checkBeforeStart(ctx, rec, l, spec, start.Dir, arts, res); err != nil {
		return nil, err
	}
	if res.Status == "" {
		res.EndBody = execute(ctx, rec, l, spec, &red)
		if err := recordOutputs(rec, l, spec, &res.EndBody); err != nil {
			res.Status, res.Reason = records.StatusFailed, err.Error()
		}
	}
	res.DurationS = time.Since(began).Seconds()
	end, err := run.End(rec, res.EndBody)
	if err != nil {
		return nil, err
	}
	res.EndSeq = end.Seq
	return res, nil
}

// checkBeforeStart runs and records the pre-flight check unless spec
// skips it; when the check fails or is interrupted it sets res's status
// and reason, and the stage must not start. An error means the ledger
// could not record it.
func checkBeforeStart(ctx, rec context.Context, l *ledger.Ledger, spec Spec, dir string, arts []ArtifactBody, res *Result) error {
	if spec.SkipPreflight {
		return nil
	}
	p, err := preflight(ctx, l, spec, dir, arts)
	switch {
	case ctx.Err() != nil:
		res.Status, res.Reason = records.StatusInterrupted, "rlgate was interrupted during the pre-flight check; the stage was not started"
		return nil
	case err != nil:
		res.Status, res.Reason = records.StatusFailed, "pre-flight: "+err.Error()
		return nil
	case p == nil:
		return nil
	}
	es, err := l.Append(rec, ledger.Record{Kind: records.KindPreflight, Run: spec.Run, Body: p})
	if err != nil {
		return err
	}
	res.Preflight, res.PreflightSeq = p, es[0].Seq
	if !p.Passed {
		res.Status, res.Reason = records.StatusFailed, fmt.Sprintf("pre-flight (entry %d) failed, so the stage was not started: %s", es[0].Seq, p.Reason)
	}
	return nil
}

func (s *Spec) check() error {
	switch {
	case s.Stage == "":
		return errors.New("run: a stage name is required (--stage)")
	case len(s.Argv) == 0:
		return errors.New("run: no command given (put it after --)")
	}
	seen := map[string]bool{}
	for _, n := range append(append([]Named{}, s.Inputs...), s.Outputs...) {
		if n.Name == "" || n.Path == "" {
			return fmt.Errorf("run: input/output %q: want name=path", n.Name+"="+n.Path)
		}
		if seen[n.Name] {
			return fmt.Errorf("run: %q is declared twice", n.Name)
		}
		seen[n.Name] = true
	}
	return nil
}

func newRunID(stage string) string {
	var b [2]byte
	rand.Read(b[:])
	return stage + "-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// execute runs the command and records its output, with the secrets red
// removed from run.start masked, metrics and telemetry while it runs. It
// returns the end body without outputs.
func execute(ctx, rec context.Context, l *ledger.Ledger, spec Spec, red *ledger.Redactor) EndBody {
	runCtx := ctx
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	cmd := Command(runCtx, spec.Argv, spec.Environ)
	cmd.Dir = spec.Dir
	for k, v := range spec.Params {
		cmd.Env = append(cmd.Env, ParamEnv(k)+"="+v)
	}
	var warn io.Writer // the stage's stderr and rlgate's warnings, one at a time
	if spec.Stderr != nil {
		warn = &syncWriter{w: spec.Stderr}
	}
	stdout := &logSink{ctx: rec, l: l, run: spec.Run, stream: "stdout", term: spec.Stdout, mask: red.Masker()}
	stderr := &logSink{ctx: rec, l: l, run: spec.Run, stream: "stderr", term: warn, mask: red.Masker()}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	var end EndBody
	var recordErr error
	note := func(err error) {
		if err != nil && recordErr == nil {
			recordErr = err
		}
	}
	ingesters := make([]*ingester, len(spec.Metrics))
	for i, m := range spec.Metrics {
		prior, err := notePrior(m.Path)
		if err != nil {
			end.Status, end.Reason = records.StatusFailed, err.Error()
			return end
		}
		ingesters[i] = &ingester{file: m, warn: warn, prior: prior}
	}

	if err := cmd.Start(); err != nil {
		end.Status, end.Reason = records.StatusFailed, fmt.Sprintf("start %s: %v", spec.Argv[0], err)
		return end
	}
	var samples []gpu.Sample
	var smu sync.Mutex
	gpuDone := make(chan gpu.Result, 1)
	gpuCtx, stopGPU := context.WithCancel(rec)
	if spec.GPU {
		s := &gpu.Sampler{Interval: spec.GPUInterval, OnSample: func(s gpu.Sample) error {
			smu.Lock()
			samples = append(samples, s)
			smu.Unlock()
			return nil
		}}
		go func() { r, _ := s.Run(gpuCtx); gpuDone <- r }()
	} else {
		gpuDone <- gpu.Result{}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var gpuRecorded int
	flushAll := func(final bool) {
		note(stdout.flush(final))
		note(stderr.flush(final))
		for _, g := range ingesters {
			note(g.poll(rec, l, spec.Run, final))
		}
		smu.Lock()
		batch := samples[gpuRecorded:]
		gpuRecorded = len(samples)
		smu.Unlock()
		if len(batch) > 0 {
			_, err := l.Append(rec, ledger.Record{Kind: records.KindGPUSamples, Run: spec.Run, Body: GPUSamples{Samples: batch}})
			note(err)
		}
	}
	tick := time.NewTicker(spec.FlushEvery)
	defer tick.Stop()
	var waitErr error
loop:
	for {
		select {
		case <-tick.C:
			flushAll(false)
		case waitErr = <-waited:
			break loop
		}
	}
	stopGPU()
	gres := <-gpuDone
	flushAll(true)

	end.LogBytes = map[string]int64{"stdout": stdout.offset, "stderr": stderr.offset}
	for _, g := range ingesters {
		end.MetricPoints += g.points
		end.MetricFindings = append(end.MetricFindings, g.findings...)
		if g.priorHow != "" {
			if end.MetricPriorFiles == nil {
				end.MetricPriorFiles = map[string]string{}
			}
			end.MetricPriorFiles[g.file.Path] = g.priorHow
		}
		if g.tailer != nil {
			if end.MetricFormats == nil {
				end.MetricFormats = map[string]metrics.Format{}
			}
			end.MetricFormats[g.file.Path] = g.tailer.Format()
			if r := g.tailer.Run(); r != nil {
				if end.MetricRuns == nil {
					end.MetricRuns = map[string]ImportedRun{}
				}
				end.MetricRuns[g.file.Path] = importedRun(r)
			}
		}
	}
	if spec.GPU {
		end.GPUState = gres.State
		if len(samples) > 0 {
			s := gpu.Summarize(samples)
			end.GPU = &s
		}
	}
	code := cmd.ProcessState.ExitCode()
	end.ExitCode = &code
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		end.Signal = ws.Signal().String()
	}
	switch {
	case ctx.Err() != nil:
		end.Status, end.Reason = records.StatusInterrupted, "rlgate was interrupted; the stage was sent SIGTERM"
	case runCtx.Err() != nil:
		end.Status, end.Reason = records.StatusFailed, fmt.Sprintf("timed out after %s", spec.Timeout)
	case waitErr != nil:
		end.Status, end.Reason = records.StatusFailed, waitErr.Error()
		end.ownExit = code > 0 && end.Signal == ""
	default:
		end.Status = records.StatusOK
	}
	if recordErr != nil {
		end.Status, end.ownExit = records.StatusFailed, false
		end.Reason = "recording the stage: " + recordErr.Error()
	}
	return end
}

// StageExit is the stage's own exit code when the run failed because the
// stage exited non-zero, so that a front end can exit with it (a trainer
// exiting 7 makes rlgate exit 7); 0 otherwise, including failures rlgate
// decided (a timeout, a signal, a declared output missing, recording).
func (r *Result) StageExit() int {
	if r.Status != records.StatusFailed || !r.ownExit || r.ExitCode == nil {
		return 0
	}
	return *r.ExitCode
}

// recordOutputs hashes the declared outputs that exist; a stage that
// succeeded but left a declared output missing has failed.
func recordOutputs(rec context.Context, l *ledger.Ledger, spec Spec, end *EndBody) error {
	if len(spec.Outputs) == 0 {
		return nil
	}
	end.Outputs = map[string]ledger.Digest{}
	var recs []ledger.Record
	var missing []string
	for _, out := range spec.Outputs {
		if _, err := os.Lstat(out.Path); err != nil {
			missing = append(missing, out.Name+"="+out.Path)
			continue
		}
		r, d, err := OutputRecord(rec, l, spec.Run, out.Name, out.Path)
		if err != nil {
			return err
		}
		end.Outputs[out.Name] = d
		recs = append(recs, r)
	}
	if len(recs) > 0 {
		if _, err := l.Append(rec, recs...); err != nil {
			return err
		}
	}
	if len(missing) > 0 && end.Status == records.StatusOK {
		sort.Strings(missing)
		return fmt.Errorf("the stage exited 0 but did not write %v", missing)
	}
	return nil
}

// ParamEnv names the environment variable through which a stage sees a
// parameter: lr -> RLGATE_PARAM_LR.
func ParamEnv(key string) string {
	return "RLGATE_PARAM_" + strings.ToUpper(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, key))
}

// GPUSamples is the body of a gpu.samples entry.
type GPUSamples struct {
	Samples []gpu.Sample `json:"samples"`
}
