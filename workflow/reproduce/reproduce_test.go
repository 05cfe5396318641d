package reproduce

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests/manifeststest"
	"github.com/rlgate/rlgate/stages/runner"
)

// sample is a real safetensors file (one tensor of each dtype).
const sample = "../../testdata/safetensors/overall.safetensors"

// record runs a stage through the runner in dir, as rlgate repro does
// (paths relative to dir), and returns its run id; the stage must end ok.
func record(t *testing.T, l *ledger.Ledger, dir, stage, script string, in, out []runner.Named, environ ...string) string {
	t.Helper()
	for _, ns := range [][]runner.Named{in, out} {
		for i := range ns {
			ns[i].Path = filepath.Join(dir, ns[i].Path)
		}
	}
	res, err := runner.Execute(t.Context(), l, runner.Spec{Stage: stage, Argv: []string{"sh", "-c", script}, Dir: dir,
		Inputs: in, Outputs: out, Environ: append(os.Environ(), environ...), SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != records.StatusOK {
		t.Fatalf("stage %s: %s: %s", stage, res.Status, res.Reason)
	}
	return res.Run
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// one reproduces one run and returns its result.
func one(t *testing.T, l *ledger.Ledger, o Options) Result {
	t.Helper()
	rs, err := Run(t.Context(), l, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("%d results, want 1: %+v", len(rs), rs)
	}
	return rs[0]
}

// TestReproducesStagesInOrder: two stages, the second reading what the
// first wrote, reproduce by their stage names in one work directory; the
// second reads the first's reproduced output. Each verdict is a reproduce
// entry naming both runs, the new runs are of stage reproduce.STAGE, and
// the work directory is gone afterwards.
func TestReproducesStagesInOrder(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "in", "a.txt"), "alpha\n")
	write(t, filepath.Join(dir, "in", "sub", "b.txt"), "beta\n")
	first := record(t, l, dir, "prep", "mkdir -p out && cat in/a.txt in/sub/b.txt > out/c.txt && ln -s c.txt out/link",
		[]runner.Named{{Name: "data", Path: "in"}}, []runner.Named{{Name: "prepared", Path: "out"}})
	second := record(t, l, dir, "count", "wc -c < out/c.txt > count.txt",
		[]runner.Named{{Name: "prepared", Path: "out"}}, []runner.Named{{Name: "count", Path: "count.txt"}})
	// The first stage's output changes after the run: the second stage
	// must read the reproduced one, not this.
	write(t, filepath.Join(dir, "out", "c.txt"), "changed\n")

	work := filepath.Join(t.TempDir(), "work")
	rs, err := Run(t.Context(), l, Options{Stages: []string{"prep", "count"}, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{first, second} {
		r := rs[i]
		if !r.Reproduced || r.Original != want || r.Refused != "" || r.Failed != "" {
			t.Errorf("run %s: %+v", want, r)
		}
		b, err := ledger.DecodeEntry[runner.Reproduction](t.Context(), l, r.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if b.Original != want || b.Run != r.Run || !b.Reproduced {
			t.Errorf("entry %d: %+v", r.Seq, b)
		}
		st, err := l.RunStatus(t.Context(), r.Run)
		if err != nil || st.Stage != StagePrefix+r.Stage {
			t.Errorf("new run %s: stage %q, %v", r.Run, st.Stage, err)
		}
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("work directory left behind: %v", err)
	}
}

// TestChangedInputRefused: an input changed since the run is named, with
// the recorded digest and the one it has now, and the stage is not run.
func TestChangedInputRefused(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "data.txt"), "recorded\n")
	run := record(t, l, dir, "copy", "cp data.txt out.txt",
		[]runner.Named{{Name: "data", Path: "data.txt"}}, []runner.Named{{Name: "out", Path: "out.txt"}})
	write(t, filepath.Join(dir, "data.txt"), "changed\n")
	r := one(t, l, Options{Runs: []string{run}})
	was, now := ledger.Sum([]byte("recorded\n")), ledger.Sum([]byte("changed\n"))
	if r.Reproduced || r.Run != "" || !strings.Contains(r.Refused, "input data") ||
		!strings.Contains(r.Refused, was.String()) || !strings.Contains(r.Refused, now.String()) {
		t.Errorf("want a refusal naming input data, %s and %s: %+v", was, now, r)
	}
}

// TestRandomBytesDiffer: a stage that writes random bytes does not
// reproduce, and the verdict names the file and the first differing byte.
func TestRandomBytesDiffer(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	run := record(t, l, dir, "noise", "mkdir -p out && printf fixed > out/a.txt && head -c 4096 /dev/urandom > out/noise.bin",
		nil, []runner.Named{{Name: "noise", Path: "out"}})
	r := one(t, l, Options{Runs: []string{run}})
	if r.Reproduced || len(r.Outputs) != 1 || r.Outputs[0].Verdict != runner.OutputDiffers ||
		!strings.HasPrefix(r.Outputs[0].At, "file noise.bin: byte offset ") {
		t.Errorf("want noise.bin named with its offset: %+v", r)
	}
}

// TestTrainedCheckpointDiffers: a stage whose checkpoint comes out with one
// element changed (its undeclared source was edited by hand) does not
// reproduce: the verdict names the tensor, its max |Δ| and how many
// elements differ. Once the recorded checkpoint is gone, the tensor is
// named by its digest alone.
func TestTrainedCheckpointDiffers(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	cks := manifeststest.WriteCheckpoints(t, sample)
	src := filepath.Join(t.TempDir(), "trainer-state")
	manifeststest.Copy(t, sample, src, 1, nil)
	run := record(t, l, dir, "train", "mkdir -p ckpt && cp "+src+"/model.safetensors ckpt/",
		nil, []runner.Named{{Name: "ckpt", Path: "ckpt"}})
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	manifeststest.Copy(t, filepath.Join(cks.Trained, "model.safetensors"), src, 1, nil) // element 0 of f: -3 -> -2

	r := one(t, l, Options{Runs: []string{run}})
	if r.Reproduced || len(r.Outputs) != 1 || r.Outputs[0].At != "tensor f: max |Δ| 1, 1 of 6 elements differ" {
		t.Errorf("want tensor f with max |Δ| 1: %+v", r)
	}

	if err := os.RemoveAll(filepath.Join(dir, "ckpt")); err != nil {
		t.Fatal(err)
	}
	r = one(t, l, Options{Runs: []string{run}})
	if r.Reproduced || len(r.Outputs) != 1 || !strings.HasPrefix(r.Outputs[0].At, "tensors f differ by digest") {
		t.Errorf("want tensor f by digest: %+v", r)
	}
}

// TestSecretNamedNeverRecorded: a stage recorded with a secret in its
// environment is refused, naming the variable, when the secret is not
// given again; given, it reproduces, and neither run's entries nor blobs
// hold the secret.
func TestSecretNamedNeverRecorded(t *testing.T) {
	const secret = "hf_reproduceTestSecret0123456789abcdef"
	l := ledgertest.New(t)
	dir := t.TempDir()
	run := record(t, l, dir, "fetch", `echo "token $HF_TOKEN" && printf %s "$HF_TOKEN" | wc -c > out.txt`,
		nil, []runner.Named{{Name: "out", Path: "out.txt"}}, "HF_TOKEN="+secret)
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HF_TOKEN=") })

	r := one(t, l, Options{Runs: []string{run}, Environ: base})
	if r.Reproduced || !strings.Contains(r.Refused, "HF_TOKEN") || strings.Contains(r.Refused, secret) {
		t.Errorf("want HF_TOKEN named as missing: %+v", r)
	}
	r = one(t, l, Options{Runs: []string{run}, Environ: append(base, "HF_TOKEN="+secret)})
	if !r.Reproduced {
		t.Fatalf("with the secret given again: %+v", r)
	}
	for e, err := range l.Entries(t.Context(), ledger.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(e.Body, []byte(secret)) {
			t.Errorf("entry %d (%s) holds the secret", e.Seq, e.Kind)
		}
		for _, d := range e.Blobs {
			if b, err := l.ReadBlob(d); err == nil && bytes.Contains(b, []byte(secret)) {
				t.Errorf("entry %d (%s): blob %s holds the secret", e.Seq, e.Kind, d)
			}
		}
	}
}

// TestInputFromBlobStore: an input tree deleted since the run is laid out
// file by file from the blob store when the store holds every file (as it
// holds an import's tasks, gold and manifest); one it lacks is named as
// missing.
func TestInputFromBlobStore(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "data", "tasks.jsonl"), "{\"id\":1}\n")
	write(t, filepath.Join(dir, "data", "gold.jsonl"), "{\"sql\":\"SELECT 1\"}\n")
	run := record(t, l, dir, "use", "cat data/tasks.jsonl data/gold.jsonl > out.txt",
		[]runner.Named{{Name: "data", Path: "data"}}, []runner.Named{{Name: "out", Path: "out.txt"}})
	for _, f := range []string{"tasks.jsonl", "gold.jsonl"} {
		raw, err := os.ReadFile(filepath.Join(dir, "data", f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.PutBlobBytes(raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
		t.Fatal(err)
	}
	if r := one(t, l, Options{Runs: []string{run}}); !r.Reproduced {
		t.Errorf("from the blob store: %+v", r)
	}

	write(t, filepath.Join(dir, "other", "x.txt"), "not stored\n")
	run = record(t, l, dir, "other", "cp other/x.txt x.txt",
		[]runner.Named{{Name: "other", Path: "other"}}, []runner.Named{{Name: "x", Path: "x.txt"}})
	if err := os.RemoveAll(filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	if r := one(t, l, Options{Runs: []string{run}}); r.Reproduced || !strings.Contains(r.Refused, "input other") || !strings.Contains(r.Refused, "now missing") {
		t.Errorf("want input other named as missing: %+v", r)
	}
}

// TestCodeChangeWarnedAndRecorded: a stage recorded at one commit and
// reproduced at another reproduces, with a warning and the entry naming
// both code versions.
func TestCodeChangeWarnedAndRecorded(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	write(t, filepath.Join(dir, "train.sh"), "printf trained > out.txt\n")
	git("add", "train.sh")
	git("commit", "-qm", "one")
	run := record(t, l, dir, "train", "sh train.sh", []runner.Named{{Name: "trainer", Path: "train.sh"}}, []runner.Named{{Name: "out", Path: "out.txt"}})
	write(t, filepath.Join(dir, "README"), "two\n")
	git("add", "README")
	git("commit", "-qm", "two")

	var warned []string
	r := one(t, l, Options{Runs: []string{run}, Warn: func(s string) { warned = append(warned, s) }})
	if !r.Reproduced || !strings.HasPrefix(r.Code, "recorded commit ") || !strings.Contains(r.Code, ", now commit ") || len(warned) != 1 || !strings.Contains(warned[0], r.Code) {
		t.Errorf("want the code change recorded and warned: %+v, warnings %q", r, warned)
	}
}

// TestConfigs: a config deleted since the run is laid out from the blob
// store; one whose secrets the ledger masked can only come from its file,
// and once that changed the stage is refused, naming the config.
func TestConfigs(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	plain, secret := filepath.Join(dir, "train.yaml"), filepath.Join(dir, "wandb.yaml")
	write(t, plain, "lr: 1e-6\nbatch: 8\n")
	write(t, secret, "project: p\napi_key: 0123456789abcdef0123456789abcdef\n")
	res, err := runner.Execute(t.Context(), l, runner.Spec{Stage: "cfg", Argv: []string{"sh", "-c", "cat train.yaml > out.txt && test -s wandb.yaml"},
		Dir: dir, Configs: []string{plain, secret}, Outputs: []runner.Named{{Name: "out", Path: filepath.Join(dir, "out.txt")}},
		Environ: os.Environ(), SkipPreflight: true})
	if err != nil || res.Status != records.StatusOK {
		t.Fatalf("%v %+v", err, res)
	}
	if err := os.Remove(plain); err != nil {
		t.Fatal(err)
	}
	if r := one(t, l, Options{Runs: []string{res.Run}}); !r.Reproduced {
		t.Errorf("train.yaml from the blob store: %+v", r)
	}
	write(t, secret, "project: q\napi_key: 0123456789abcdef0123456789abcdef\n")
	if r := one(t, l, Options{Runs: []string{res.Run}}); r.Reproduced || !strings.Contains(r.Refused, "config "+secret) || !strings.Contains(r.Refused, "api_key") {
		t.Errorf("want wandb.yaml named: %+v", r)
	}
}
