package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/metrics"
)

var ctx = context.Background()

// entriesOf returns the run's entries of one kind.
func entriesOf(t *testing.T, l *ledger.Ledger, run, kind string) []ledger.Entry {
	t.Helper()
	var out []ledger.Entry
	for e, err := range l.Entries(ctx, ledger.Filter{Run: run, Kind: kind}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// streamOf reassembles a stream from the run's log chunks.
func streamOf(t *testing.T, l *ledger.Ledger, run, stream string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range entriesOf(t, l, run, records.KindLog) {
		var c LogChunk
		json.Unmarshal(e.Body, &c)
		if c.Stream != stream {
			continue
		}
		data, err := l.ReadBlob(e.Blobs[0])
		if err != nil {
			t.Fatal(err)
		}
		if int64(b.Len()) != c.Offset {
			t.Errorf("%s chunk at seq %d starts at %d, want %d", stream, e.Seq, c.Offset, b.Len())
		}
		b.Write(data)
	}
	return b.String()
}

func TestRunRecordsAStage(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cfg.yaml"), []byte("lr: 1e-6\nbatch: 8\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "data.txt"), []byte("tasks\n"), 0o644)
	excerpt, _ := filepath.Abs("../../testdata/trainer-logs/verl-console-doc-excerpt.log")
	// The stage writes the real veRL console excerpt line by line, slowly,
	// so the metrics are ingested while it runs, not only at the end.
	script := `set -e
echo "lr is $RLGATE_PARAM_LR"
echo "warning: something" >&2
while IFS= read -r line; do printf '%s\n' "$line" >> train.log; sleep 0.15; done < "$EXCERPT"
mkdir -p out && cp data.txt out/weights.txt`
	var term bytes.Buffer
	res, err := Execute(ctx, l, Spec{
		Stage: "rl1", Run: "rl1-test", Argv: []string{"sh", "-c", script}, Dir: dir,
		Inputs:  []Named{{Name: "data", Path: filepath.Join(dir, "data.txt")}},
		Outputs: []Named{{Name: "ckpt", Path: filepath.Join(dir, "out")}},
		Params:  map[string]string{"lr": "1e-6"},
		Configs: []string{filepath.Join(dir, "cfg.yaml")},
		Metrics: []MetricFile{{Path: filepath.Join(dir, "train.log"), Format: metrics.FormatVerlConsole}},
		Environ: []string{"PATH=" + os.Getenv("PATH"), "EXCERPT=" + excerpt, "HF_TOKEN=hf_secret_value", "CUDA_VISIBLE_DEVICES=0", "HOME=/root"},
		Stdout:  &term, FlushEvery: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" || *res.ExitCode != 0 {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if got := streamOf(t, l, "rl1-test", "stdout"); got != "lr is 1e-6\n" || term.String() != got {
		t.Errorf("stdout in ledger %q, on terminal %q", got, term.String())
	}
	if got := streamOf(t, l, "rl1-test", "stderr"); got != "warning: something\n" {
		t.Errorf("stderr in ledger %q", got)
	}

	start, _ := l.EntryBySeq(ctx, res.StartSeq)
	var sb StartBody
	json.Unmarshal(start.Body, &sb)
	if sb.Env["HF_TOKEN"] != ledger.Redacted || sb.Env["CUDA_VISIBLE_DEVICES"] != "0" || sb.Env["HOME"] != "" {
		t.Errorf("environment capture: %v", sb.Env)
	}
	if bytes.Contains(start.Body, []byte("hf_secret_value")) {
		t.Error("a secret reached the ledger")
	}
	want, _ := DigestPath(ctx, filepath.Join(dir, "data.txt"))
	if sb.Inputs["data"] != want.Digest || sb.Params["lr"] != "1e-6" {
		t.Errorf("run.start inputs %v params %v", sb.Inputs, sb.Params)
	}
	canon, _ := ConfigDigest(filepath.Join(dir, "cfg.yaml"))
	if sb.Configs["cfg.yaml"] != canon { // keyed relative to the stage directory
		t.Errorf("config digest %v, want canonical %s", sb.Configs, canon)
	}
	if res.Outputs["ckpt"].IsZero() {
		t.Error("output not hashed")
	}

	// Metrics: what the ledger holds equals a parse of the whole file, and
	// more than one batch shows they arrived while the stage ran.
	pts, _, err := metrics.ParseFile(filepath.Join(dir, "train.log"), metrics.Options{Format: metrics.FormatVerlConsole})
	if err != nil {
		t.Fatal(err)
	}
	if res.MetricPoints != int64(len(pts)) || len(pts) == 0 {
		t.Errorf("ingested %d points, the file has %d", res.MetricPoints, len(pts))
	}
	series, _, err := l.Series(ctx, "rl1-test", "critic/vf_loss")
	if err != nil || len(series) != 2 || series[0].Value != 14.947 || series[1].Step != 1 {
		t.Errorf("critic/vf_loss series %v, %v", series, err)
	}
	if n := len(entriesOf(t, l, "rl1-test", records.KindMetrics)); n < 2 {
		t.Errorf("%d metrics entries: the file was read only at the end", n)
	}
}

func TestRunFailures(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	tests := []struct {
		name    string
		spec    Spec
		reason  string
		code    int
		maxTime time.Duration
	}{
		{"non-zero exit", Spec{Argv: []string{"sh", "-c", "exit 3"}}, "exit status 3", 3, 5 * time.Second},
		{"timeout", Spec{Argv: []string{"sleep", "30"}, Timeout: 300 * time.Millisecond}, "timed out after 300ms", -1, 5 * time.Second},
		{"declared output missing", Spec{Argv: []string{"true"}, Outputs: []Named{{Name: "ckpt", Path: filepath.Join(dir, "never")}}}, "did not write [ckpt=", 0, 5 * time.Second},
		{"command not found", Spec{Argv: []string{"no-such-trainer-binary"}}, "start no-such-trainer-binary", 0, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Stage = "sft"
			began := time.Now()
			res, err := Execute(ctx, l, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "failed" || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("status %s, reason %q; want failed, %q", res.Status, res.Reason, tt.reason)
			}
			if res.ExitCode != nil && *res.ExitCode != tt.code {
				t.Errorf("exit code %d, want %d", *res.ExitCode, tt.code)
			}
			if d := time.Since(began); d > tt.maxTime {
				t.Errorf("took %s", d)
			}
			runs, _ := l.Runs(ctx)
			if r := runs[len(runs)-1]; r.Run != res.Run || r.Status != "failed" {
				t.Errorf("runs table: %+v", r)
			}
		})
	}
}

func TestLineageLinksInputToProducingRun(t *testing.T) {
	l := ledgertest.New(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sft-ckpt")
	sft, err := Execute(ctx, l, Spec{Stage: "sft", Argv: []string{"sh", "-c", "mkdir -p " + out + " && echo weights > " + out + "/w"}, Outputs: []Named{{Name: "ckpt", Path: out}}})
	if err != nil || sft.Status != "ok" {
		t.Fatalf("%v %+v", err, sft)
	}
	rl, err := Execute(ctx, l, Spec{Stage: "rl", Argv: []string{"true"}, Inputs: []Named{{Name: "base", Path: out}}})
	if err != nil || rl.Status != "ok" {
		t.Fatalf("%v %+v", err, rl)
	}
	for _, e := range entriesOf(t, l, rl.Run, records.KindArtifact) {
		var a ArtifactBody
		json.Unmarshal(e.Body, &a)
		if a.Role == "input" && (a.ProducedBy == nil || a.ProducedBy.Run != sft.Run) {
			t.Errorf("input %s produced_by %+v, want run %s", a.Name, a.ProducedBy, sft.Run)
		}
	}
}

// TestGPUTelemetryFromFakeSMI puts a fake nvidia-smi on PATH: no GPU
// exists on this machine.
func TestGPUTelemetryFromFakeSMI(t *testing.T) {
	bin := t.TempDir()
	smi := "#!/bin/sh\necho '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 550.54.15, 81559, 40000, 97, 650.5, 61'\necho '1, GPU-bbbb, NVIDIA H100 80GB HBM3, 550.54.15, 81559, 1000, 3, [N/A], 35'\n"
	os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	l := ledgertest.New(t)
	res, err := Execute(ctx, l, Spec{Stage: "rl", Argv: []string{"sleep", "0.5"}, GPU: true, GPUInterval: 50 * time.Millisecond, FlushEvery: 100 * time.Millisecond})
	if err != nil || res.Status != "ok" {
		t.Fatalf("%v %+v", err, res)
	}
	if res.GPU == nil || len(res.GPU.GPUs) != 2 || res.GPUState != "seen" {
		t.Fatalf("gpu summary %+v state %s", res.GPU, res.GPUState)
	}
	if peak := res.GPU.GPUs[0].PeakMemoryUsedMiB; peak == nil || *peak != 40000 {
		t.Errorf("peak memory %v", peak)
	}
	if res.GPU.GPUs[1].MeanPowerW != nil {
		t.Errorf("[N/A] power became %v", *res.GPU.GPUs[1].MeanPowerW)
	}
	if len(entriesOf(t, l, res.Run, records.KindGPUSamples)) == 0 {
		t.Error("no gpu.samples entries")
	}
	// Without nvidia-smi the run records that no GPU was seen; not an error.
	t.Setenv("PATH", "/usr/bin:/bin")
	res, err = Execute(ctx, l, Spec{Stage: "rl", Argv: []string{"true"}, GPU: true})
	if err != nil || res.Status != "ok" || res.GPUState != "no-gpu" || res.GPU != nil {
		t.Errorf("without nvidia-smi: %v %+v", err, res)
	}
}

func TestCaptureEnv(t *testing.T) {
	var r ledger.Redactor
	got := captureEnv(&r, []string{"WANDB_API_KEY=k", "HF_TOKEN=t", "OPENAI_API_KEY=x", "CUDA_VISIBLE_DEVICES=0,1", "HOME=/root", "VLLM_SECRET=s", "NCCL_DEBUG=INFO", "RAY_ADDRESS=auto", "MY_PASSWORD=p", "OMP_NUM_THREADS=4", "TOKENIZERS_PARALLELISM=false"})
	want := map[string]string{"WANDB_API_KEY": ledger.Redacted, "HF_TOKEN": ledger.Redacted, "CUDA_VISIBLE_DEVICES": "0,1", "VLLM_SECRET": ledger.Redacted, "NCCL_DEBUG": "INFO", "RAY_ADDRESS": "auto", "OMP_NUM_THREADS": "4", "TOKENIZERS_PARALLELISM": "false"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("captured (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"env.HF_TOKEN", "env.VLLM_SECRET", "env.WANDB_API_KEY"}, r.Fields()); d != "" {
		t.Errorf("redacted (-want +got):\n%s", d)
	}
}

// TestRunReadsAPriorMetricsFileAsTheStageLeavesIt: a metrics file already
// there when the stage starts is an earlier run's if the stage writes it
// again (repro running a stage again), and the file to record if the stage
// leaves it alone. The run records the stage's points only, whether it
// truncates the file, appends to it, replaces it or rewrites the same
// bytes between two reads, and the file whole when untouched.
func TestRunReadsAPriorMetricsFileAsTheStageLeavesIt(t *testing.T) {
	prior := `{"step":0,"loss":9}` + "\n" + `{"step":1,"loss":9}` + "\n" + `{"step":2,"loss":9}` + "\n"
	ours := [][2]float64{{0, 1}, {1, 2}}
	// Each stage waits past several reads before it writes, as a trainer
	// loading its model does.
	const write = `sleep 0.4; printf '{"step":0,"loss":1}\n' %s m.jsonl; sleep 0.2; printf '{"step":1,"loss":2}\n' >> m.jsonl`
	for _, tt := range []struct {
		name, script string
		flush        time.Duration
		want         [][2]float64
		how          string
	}{
		{"truncating trainer", fmt.Sprintf(write, ">"), 50 * time.Millisecond, ours, "rewritten by the stage"},
		{"appending trainer", fmt.Sprintf(write, ">>"), 50 * time.Millisecond, ours, "appended to by the stage: read from byte 60"},
		{"replacing trainer", `sleep 0.4; printf '{"step":0,"loss":1}\n{"step":1,"loss":2}\n' > new.jsonl; mv new.jsonl m.jsonl`, 50 * time.Millisecond, ours, "replaced by the stage"},
		// A deterministic re-run writes the earlier bytes again; with no
		// read between the truncation and the end, only the file's time
		// shows it was written.
		{"same bytes again", `sleep 0.05; printf '` + strings.ReplaceAll(prior, "\n", `\n`) + `' > m.jsonl`, time.Hour, [][2]float64{{0, 9}, {1, 9}, {2, 9}}, "rewritten by the stage"},
		{"untouched", "sleep 0.3", 50 * time.Millisecond, [][2]float64{{0, 9}, {1, 9}, {2, 9}}, "which left it unchanged: read whole"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := ledgertest.New(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "m.jsonl")
			if err := os.WriteFile(path, []byte(prior), 0o644); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Minute) // a later write shows in the time, however coarse the clock
			os.Chtimes(path, old, old)
			var term bytes.Buffer
			res, err := Execute(ctx, l, Spec{Stage: "rl", Run: "rl-again", Argv: []string{"sh", "-c", tt.script}, Dir: dir,
				Metrics: []MetricFile{{Path: path, Format: metrics.FormatJSONL}}, Environ: []string{"PATH=" + os.Getenv("PATH")},
				Stderr: &term, FlushEvery: tt.flush})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "ok" || len(res.MetricFindings) > 0 {
				t.Fatalf("status %s (%s), findings %q", res.Status, res.Reason, res.MetricFindings)
			}
			series, _, err := l.Series(ctx, "rl-again", "loss")
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]float64
			for _, p := range series {
				got = append(got, [2]float64{float64(p.Step), p.Value})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("loss recorded (-want +recorded):\n%s", diff)
			}
			if how := res.MetricPriorFiles[path]; !strings.Contains(how, tt.how) || !strings.Contains(term.String(), how) {
				t.Errorf("run.end metric_prior_files %q, stderr %q; want %q said in both", res.MetricPriorFiles, term.String(), tt.how)
			}
		})
	}
}
