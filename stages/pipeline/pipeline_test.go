package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

var ctx = context.Background()

// threeStages is a pipeline whose stages each copy their input forward and
// add their own param, so a change upstream really changes what flows down.
const threeStages = `stages:
  c:
    cmd: "cat out/b.txt > out/c.txt && echo c-$RLGATE_PARAM_TAG >> out/c.txt"
    deps: {b: out/b.txt}
    outs: {c: out/c.txt}
    params: {tag: "1"}
    gpu: off
  a:
    cmd: "mkdir -p out && cat in.txt > out/a.txt && echo a-$RLGATE_PARAM_TAG >> out/a.txt"
    deps: {in: in.txt}
    outs: {a: out/a.txt}
    params: {tag: "1"}
    gpu: off
  b:
    cmd: [sh, -c, "cat out/a.txt > out/b.txt && echo b-$RLGATE_PARAM_TAG >> out/b.txt"]
    deps: {a: out/a.txt}
    outs: {b: out/b.txt}
    params: {tag: "one"}
    gpu: off
`

func actions(t *testing.T, ds []Decision) string {
	t.Helper()
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Stage+":"+d.Action)
	}
	return strings.Join(parts, " ")
}

func TestReproRunsOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte(threeStages), 0o644)
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("v1\n"), 0o644)
	l := ledgertest.New(t)
	repro := func(names ...string) string {
		t.Helper()
		f, err := Load(pf)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := Repro(ctx, l, f, names, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return actions(t, ds)
	}
	steps := []struct {
		name   string
		change func()
		names  []string
		want   string
	}{
		{"first run executes every stage in dependency order", nil, nil, "a:ran b:ran c:ran"},
		{"re-running executes nothing", nil, nil, "a:skip b:skip c:skip"},
		{"an input change re-runs its stage and those downstream", func() {
			os.WriteFile(filepath.Join(dir, "in.txt"), []byte("v2\n"), 0o644)
		}, nil, "a:ran b:ran c:ran"},
		{"a param change re-runs that stage and downstream only", func() {
			os.WriteFile(pf, []byte(strings.Replace(threeStages, `tag: "one"`, `tag: "two"`, 1)), 0o644)
		}, nil, "a:skip b:ran c:ran"},
		{"a command change that writes the same bytes stops there", func() {
			cur, _ := os.ReadFile(pf)
			os.WriteFile(pf, []byte(strings.Replace(string(cur), "cat out/a.txt > out/b.txt", "cat out/a.txt  > out/b.txt", 1)), 0o644)
		}, nil, "a:skip b:ran c:skip"},
		{"a tampered output re-runs its producer", func() {
			os.WriteFile(filepath.Join(dir, "out/c.txt"), []byte("edited by hand\n"), 0o644)
		}, nil, "a:skip b:skip c:ran"},
		{"naming a stage selects it and its upstream", nil, []string{"b"}, "a:skip b:skip"},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		if got := repro(s.names...); got != s.want {
			t.Fatalf("%s: got %s, want %s", s.name, got, s.want)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "out/c.txt"))
	if string(got) != "v2\na-1\nb-two\nc-1\n" {
		t.Errorf("out/c.txt = %q", got)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "stages:\n  a:\n    cmd: [true]\n    dependencies: {x: y}\n", `rlgate.yaml:4: stage "a": dependencies: unknown key (want cmd, deps, outs, params, configs, metrics, timeout, gpu, gate)`},
		{"params as a list", "stages:\n  a:\n    cmd: [true]\n    params: [lr]\n", `rlgate.yaml:4: stage "a": params: want a mapping KEY: VALUE of scalars, got a list`},
		{"deps as a scalar", "stages:\n  a:\n    cmd: [true]\n    deps: in.txt\n", `rlgate.yaml:4: stage "a": deps: want a mapping NAME: PATH, or a list of paths (each named by its path), got a scalar`},
		{"a path listed twice", "stages:\n  a:\n    cmd: [true]\n    outs:\n      - o.txt\n      - ./o.txt\n", `rlgate.yaml:5: stage "a": outs: want a mapping NAME: PATH, or a list of paths (each named by its path), got o.txt twice at line 6`},
		{"a list entry that is not a path", "stages:\n  a:\n    cmd: [true]\n    metrics:\n      - m.json: {cache: false}\n", `rlgate.yaml:5: stage "a": metrics: want a list of FILE[:FORMAT], got a mapping at line 5`},
		{"one name for a dep and an out", "stages:\n  a:\n    cmd: [true]\n    deps: [x.txt]\n    outs: [x.txt]\n", `stage "a": "x.txt" names both a dep and an out`},
		{"bad gpu", "stages:\n  a:\n    cmd: [true]\n    gpu: on\n", `rlgate.yaml:4: stage "a": gpu: want auto or off, got "on"`},
		{"no cmd", "stages:\n  a:\n    outs: {x: y}\n", "no cmd"},
		{"cycle", "stages:\n  a:\n    cmd: [true]\n    deps: {x: b.txt}\n    outs: {y: a.txt}\n  b:\n    cmd: [true]\n    deps: {x: a.txt}\n    outs: {y: b.txt}\n", "cycle"},
		{"two producers", "stages:\n  a:\n    cmd: [true]\n    outs: {y: o}\n  b:\n    cmd: [true]\n    outs: {z: o}\n", "written by both"},
		{"bad timeout", "stages:\n  a:\n    cmd: [true]\n    timeout: soon\n", "timeout"},
		{"no stages", "stages: {}\n", "non-empty"},
		{"top-level typo", "stage:\n  a:\n    cmd: [true]\n", "field stage not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "rlgate.yaml")
			os.WriteFile(p, []byte(tt.yaml), 0o644)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("got %v, want an error naming %s and saying %q", err, p, tt.want)
			}
		})
	}
}

// TestSeedPipelineValidates checks the shipped example: it loads, orders
// its five stages, and a dry run decides without running anything.
func TestSeedPipelineValidates(t *testing.T) {
	f, err := Load("../../examples/seed-pipeline/rlgate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range f.Stages {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "synthesize sft rl_stage1 rl_stage2 evaluate" {
		t.Errorf("order %s", got)
	}
	l := ledgertest.New(t)
	ds, err := Repro(ctx, l, f, nil, Options{DryRun: true})
	if err != nil || len(ds) != 5 {
		t.Fatalf("%v %v", ds, err)
	}
	if runs, _ := l.Runs(ctx); len(runs) != 0 {
		t.Errorf("a dry run ran %d stages", len(runs))
	}
}

// TestReproIgnoresHowThePipelineIsNamed: the same pipeline reached by an
// absolute and a relative path is up to date either way, configs included.
func TestReproIgnoresHowThePipelineIsNamed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("lr: 1e-6\n"), 0o644)
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte("stages:\n  train:\n    cmd: \"echo done > out.txt\"\n    configs: [cfg.yaml]\n    outs: {out: out.txt}\n    gpu: off\n"), 0o644)
	l := ledgertest.New(t)
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, pf)
	if err != nil {
		t.Fatal(err)
	}
	for i, path := range []string{pf, rel} {
		f, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := Repro(ctx, l, f, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"ran", "skip"}[i]
		if ds[0].Action != want {
			t.Errorf("via %s: %s (%v), want %s", path, ds[0].Action, ds[0].Reasons, want)
		}
	}
}

// TestReproComparesWhatWasRecorded: run.start records a command and params
// with secrets redacted, so repro must compare the redacted forms, or a
// stage with a token would never be up to date.
func TestReproComparesWhatWasRecorded(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte("stages:\n  pull:\n    cmd: \"echo fetch --token tok-5150 > out.txt\"\n    params: {api_key: k-6160, lr: \"1e-6\"}\n    outs: {out: out.txt}\n    gpu: off\n"), 0o644)
	l := ledgertest.New(t)
	for _, want := range []string{"ran", "skip"} {
		f, err := Load(pf)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := Repro(ctx, l, f, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Action != want {
			t.Errorf("%s (%v), want %s", ds[0].Action, ds[0].Reasons, want)
		}
	}
}

// TestLoadDVCStyleStage: a stage written as dvc.yaml writes one (deps,
// outs and metrics as lists of paths, cmd a string) loads, names each path
// by itself, and runs through repro.
func TestLoadDVCStyleStage(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "rlgate.yaml")
	os.WriteFile(pf, []byte(`stages:
  one:
    cmd: cat in.txt > one.txt && echo "step:1 - loss:0.5" > one.log
    deps: [in.txt]
    outs: [one.txt]
    metrics: [one.log]
    gpu: off
  two:
    cmd: cat one.txt ./one.txt > two.txt
    deps:
      - ./one.txt
    outs:
      - two.txt
    gpu: off
`), 0o644)
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("x\n"), 0o644)
	f, err := Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]map[string]string{}
	for _, s := range f.Stages {
		got[s.Name] = []map[string]string{s.Deps, s.Outs}
	}
	want := map[string][]map[string]string{
		"one": {{"in.txt": "in.txt"}, {"one.txt": "one.txt"}},
		"two": {{"one.txt": "./one.txt"}, {"two.txt": "two.txt"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deps and outs (-want +got):\n%s", d)
	}
	if f.Stages[0].Name != "one" || len(f.Stages[0].Metrics) != 1 || f.Stages[1].Upstream[0] != "one" {
		t.Errorf("stages %+v %+v", f.Stages[0], f.Stages[1])
	}
	l := ledgertest.New(t)
	for _, want := range []string{"one:ran two:ran", "one:skip two:skip"} {
		ds, err := Repro(ctx, l, f, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := actions(t, ds); got != want {
			t.Errorf("repro: %s, want %s (%v)", got, want, ds)
		}
	}
}
