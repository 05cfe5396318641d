package reproduce

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/runner"
)

// layout maps a recorded run's paths into the work directory: a path
// inside the directory the stage ran in goes to the same place under work,
// so the recorded command, with its relative paths, finds it there.
type layout struct {
	dir  string // the recorded directory
	work string
}

// recorded returns a recorded path as an absolute one: a relative path is
// relative to the directory the stage ran in.
func (lo layout) recorded(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(lo.dir, p)
}

// place returns where a recorded path goes in the work directory, and
// false (with the recorded path) for one outside the stage's directory.
func (lo layout) place(p string) (string, bool) {
	abs := lo.recorded(p)
	rel, err := filepath.Rel(lo.dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs, false
	}
	return filepath.Join(lo.work, rel), true
}

// refusal is a reason not to run a stage; it is the verdict, not an error.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// reproduceRun lays out rec's inputs under work, runs its command there
// through the runner and compares what it wrote with what rec recorded.
func reproduceRun(ctx context.Context, l *ledger.Ledger, rec *runner.Recording, work string, o Options) (runner.Reproduction, error) {
	b := runner.Reproduction{Original: rec.Run.Run, Stage: rec.Run.Stage}
	spec, err := prepare(ctx, l, rec, work, o)
	var r *refusal
	switch {
	case errors.As(err, &r):
		b.Refused = r.msg
		return b, nil
	case err != nil:
		return b, err
	}
	res, err := runner.Execute(ctx, l, spec)
	if err != nil {
		return b, err
	}
	b.Run = res.Run
	if res.Status != records.StatusOK {
		b.Failed = string(res.Status) + ": " + res.Reason
	}
	start, err := ledger.DecodeEntry[runner.StartBody](ctx, l, res.StartSeq)
	if err != nil {
		return b, err
	}
	if b.Code = codeChange(rec.Start.Code, start.Code); b.Code != "" && o.Warn != nil {
		o.Warn(fmt.Sprintf("stage %s: the code version differs from run %s's: %s", rec.Run.Stage, rec.Run.Run, b.Code))
	}
	lo := layout{dir: rec.Start.Dir, work: work}
	if b.Outputs, err = compareOutputs(ctx, l, rec, lo, res.Outputs); err != nil {
		return b, err
	}
	m, err := compareMetrics(ctx, l, rec.Run.Run, res.Run)
	if err != nil {
		return b, err
	}
	if m != nil {
		b.Outputs = append(b.Outputs, *m)
	}
	b.Reproduced = b.Failed == "" && !slices.ContainsFunc(b.Outputs, func(out runner.ReproducedOutput) bool { return out.Verdict != runner.OutputIdentical })
	return b, nil
}

// prepare lays out rec's inputs and configs under work and returns the
// runner spec that runs the recorded command there; a refusal when an
// input or config cannot be laid out as recorded or a secret is missing.
func prepare(ctx context.Context, l *ledger.Ledger, rec *runner.Recording, work string, o Options) (runner.Spec, error) {
	st := rec.Start
	lo := layout{dir: st.Dir, work: work}
	spec := runner.Spec{Stage: StagePrefix + rec.Run.Stage, Argv: st.Argv, Dir: work,
		GPU: rec.End.GPUState != "", Timeout: time.Duration(st.TimeoutS * float64(time.Second)),
		SkipPreflight: st.SkipPreflight, Stdout: o.Stdout, Stderr: o.Stderr}
	if fi, err := os.Stat(st.Dir); err == nil && fi.IsDir() {
		spec.CodeDir = st.Dir
	}
	env, params, err := environ(st, o.Environ, work)
	if err != nil {
		return spec, err
	}
	spec.Environ, spec.Params = env, params
	for _, a := range rec.Artifacts {
		switch a.Role {
		case records.RoleInput:
			p, err := layInput(ctx, l, lo, a)
			if err != nil {
				return spec, err
			}
			spec.Inputs = append(spec.Inputs, runner.Named{Name: a.Name, Path: p})
		case records.RoleConfig:
			p, err := layConfig(l, lo, a)
			if err != nil {
				return spec, err
			}
			spec.Configs = append(spec.Configs, p)
		}
	}
	for _, out := range st.Outputs {
		p, inside := lo.place(out.Path)
		if !inside {
			return spec, refuse("output %s (%s) lies outside the stage's directory %s: running the stage again would overwrite it", out.Name, out.Path, st.Dir)
		}
		if _, err := os.Lstat(p); err == nil {
			return spec, refuse("output %s (%s) was already written in the work directory by a stage reproduced before", out.Name, out.Path)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return spec, err
		}
		spec.Outputs = append(spec.Outputs, runner.Named{Name: out.Name, Path: p})
	}
	for _, m := range st.Metrics {
		p, _ := lo.place(m.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return spec, err
		}
		spec.Metrics = append(spec.Metrics, runner.MetricFile{Path: p, Format: m.Format})
	}
	return spec, nil
}

// environ returns the reproduction's environment and parameters: base
// without the variables a run records, and with PWD the work directory,
// then the recorded ones, except the ledger's (the stages record where
// base says: the reproduction's StageLedger); a recorded value
// that was redacted, and a redacted parameter, must be given again in
// base (NAME, and RLGATE_PARAM_<KEY> for a parameter), and each one that
// is not is named in the refusal. A redacted argument cannot be given
// again: the stage is refused.
func environ(st runner.StartBody, base []string, work string) ([]string, map[string]string, error) {
	redacted := map[string]bool{}
	for _, f := range st.Redacted {
		redacted[f] = true
	}
	var argv []string
	for _, f := range st.Redacted {
		if strings.HasPrefix(f, "argv") {
			argv = append(argv, f)
		}
	}
	if len(argv) > 0 {
		return nil, nil, refuse("the recorded command held secrets (%s), which the ledger does not keep: a stage that takes secrets on its command line cannot be run again. Try: have the stage read them from its environment", strings.Join(argv, ", "))
	}
	given := map[string]string{}
	ownLedger := func(name string) bool { return name == ledger.EnvLedger || name == ledger.EnvBlobs }
	env := []string{"PWD=" + work}
	for _, kv := range base {
		name, value, _ := strings.Cut(kv, "=")
		given[name] = value
		if name != "PWD" && (!runner.EnvRecorded(name) || ownLedger(name)) {
			env = append(env, kv)
		}
	}
	var missing []string
	for _, name := range sortedKeys(st.Env) {
		if ownLedger(name) {
			continue
		}
		value := st.Env[name]
		if redacted["env."+name] {
			v, ok := given[name]
			if !ok {
				missing = append(missing, name)
				continue
			}
			value = v
		}
		env = append(env, name+"="+value)
	}
	params := map[string]string{}
	for _, k := range sortedKeys(st.Params) {
		v := st.Params[k]
		if redacted["params."+k] {
			var ok bool
			if v, ok = given[runner.ParamEnv(k)]; !ok {
				missing = append(missing, runner.ParamEnv(k)+" (param "+k+")")
				continue
			}
		}
		params[k] = v
	}
	if len(missing) > 0 {
		return nil, nil, refuse("the stage needs secrets the ledger redacted and this environment does not give again: %s. Try: set them and run rlgate reproduce again", strings.Join(missing, ", "))
	}
	if st.Params == nil {
		params = nil
	}
	return env, params, nil
}

// codeChange says how code differs from the recorded code version; "" when
// it does not.
func codeChange(was, now runner.CodeVersion) string {
	describe := func(c runner.CodeVersion) string {
		switch {
		case c.Commit == "":
			return "no git commit"
		case c.Dirty && c.Diff != nil:
			return "commit " + c.Commit + " with changes " + c.Diff.String()
		case c.Dirty:
			return "commit " + c.Commit + " with changes"
		}
		return "commit " + c.Commit
	}
	if describe(was) == describe(now) {
		return ""
	}
	return "recorded " + describe(was) + ", now " + describe(now)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
