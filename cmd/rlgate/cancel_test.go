package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/grade"
)

// cancelHugeSize is the apparent size of the sparse inputs below: at the
// few GB/s BLAKE3 reaches on one core, hashing one takes minutes, so a
// command that ignores Ctrl-C cannot finish before the test gives up on it.
const cancelHugeSize = 1 << 40

// cancelSparseFile creates path as a sparse file of size bytes after
// prefix: reading it costs hashing time but no disk.
func cancelSparseFile(t *testing.T, path string, prefix []byte, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, prefix, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// cancelSparseSafetensors creates path as a safetensors file holding one
// F32 tensor "w" of n zero bytes, sparse.
func cancelSparseSafetensors(t *testing.T, path string, n int64) {
	t.Helper()
	header := fmt.Appendf(nil, `{"w":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n/4, n)
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	prefix := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	cancelSparseFile(t, path, append(prefix, header...), int64(len(prefix)+len(header))+n)
}

// TestInterruptDuringHashing: Ctrl-C reaches every kind of hashing (a
// file, a tree, a checkpoint's plain files and tensors, a weight diff):
// the command stops, says "interrupted" and exits 130.
func TestInterruptDuringHashing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bigFile := filepath.Join(dir, "tree", "sub", "big.bin")
	cancelSparseFile(t, bigFile, nil, cancelHugeSize)
	os.WriteFile(filepath.Join(dir, "tree", "small.txt"), []byte("small\n"), 0o644)

	// A checkpoint whose tensors are small but which carries a huge plain
	// file, as an optimizer state beside the weights.
	ckptPlain := filepath.Join(dir, "ckpt-plain")
	sample, err := os.ReadFile(sampleCkpt)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(ckptPlain, 0o755)
	os.WriteFile(filepath.Join(ckptPlain, "model.safetensors"), sample, 0o644)
	optimizer := filepath.Join(ckptPlain, "optimizer.pt")
	cancelSparseFile(t, optimizer, nil, cancelHugeSize)

	hugeA := filepath.Join(dir, "a", "model.safetensors")
	hugeB := filepath.Join(dir, "b", "model.safetensors")
	cancelSparseSafetensors(t, hugeA, cancelHugeSize)
	cancelSparseSafetensors(t, hugeB, cancelHugeSize)

	for _, tc := range []struct {
		name string
		busy string // the file being hashed when the signal comes
		args []string
	}{
		{"hash file", bigFile, []string{"hash", bigFile}},
		{"hash tree", bigFile, []string{"hash", filepath.Join(dir, "tree")}},
		{"ckpt digest plain file", optimizer, []string{"ckpt", "digest", ckptPlain}},
		{"ckpt digest tensor", hugeA, []string{"ckpt", "digest", hugeA}},
		{"ckpt diff", hugeB, []string{"ckpt", "diff", hugeA, hugeB}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := interruptWhenOpen(t, tc.busy, tc.args...)
			if code != exitInterrupted || !strings.Contains(stderr, "interrupted") {
				t.Errorf("exit %d, stderr %q; want exit %d and \"interrupted\"", code, stderr, exitInterrupted)
			}
		})
	}
}

// TestGradeQueryTimeoutFlag: --query-timeout bounds a hostile prediction,
// which counts as incorrect and stays in the denominator, and the limit
// used is recorded with the grading run. The predictions are BIRD
// mini-dev's gold queries, one replaced by an endless recursive CTE.
func TestGradeQueryTimeoutFlag(t *testing.T) {
	dir := t.TempDir()
	ldir := filepath.Join(dir, "ledger")
	t.Setenv(ledger.EnvLedger, ldir)
	if code, _, errOut := rlgate(t, "init"); code != 0 {
		t.Fatal(errOut)
	}
	bird := "../../testdata/bird"
	out := filepath.Join(dir, "bird")
	if code, _, errOut := rlgate(t, "data", "import", "bird", "--dev", bird+"/mini_dev_sqlite.json", "--db-root", bird+"/dev_databases", "--out", out); code != 0 {
		t.Fatal(errOut)
	}
	tasks, err := os.Open(filepath.Join(out, "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer tasks.Close()
	first := bufio.NewScanner(tasks)
	first.Scan()
	var hostile struct{ Index int }
	if err := json.Unmarshal(first.Bytes(), &hostile); err != nil {
		t.Fatal(err)
	}
	var dev []struct{ SQL string }
	raw, _ := os.ReadFile(bird + "/mini_dev_sqlite.json")
	if err := json.Unmarshal(raw, &dev); err != nil {
		t.Fatal(err)
	}
	var preds bytes.Buffer
	for i, q := range dev {
		if i == hostile.Index {
			q.SQL = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r"
		}
		b, _ := json.Marshal(map[string]any{"index": i, "sql": q.SQL})
		preds.Write(append(b, '\n'))
	}
	predFile := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(predFile, preds.Bytes(), 0o644)

	code, stdout, errOut := rlgate(t, "grade", "--predictions", predFile, "--format", "jsonl", "--tasks", out,
		"--metric", "bird", "--run", "hostile", "--query-timeout", "1s", "--json")
	if code != 0 {
		t.Fatalf("grade: exit %d, %s", code, errOut)
	}
	var ss []grade.FileSummary
	if err := json.Unmarshal([]byte(stdout), &ss); err != nil || len(ss) != 1 {
		t.Fatalf("--json: want a list of one summary: %v\n%s", err, stdout)
	}
	s := ss[0]
	if s.Total != 140 || s.Correct > 139 {
		t.Errorf("graded %d/%d, want at most 139/140: the hostile prediction counts, as incorrect", s.Correct, s.Total)
	}
	for _, it := range s.Items {
		if it.Index == hostile.Index && (it.Correct || it.Verdict != grade.VerdictPredError || !strings.Contains(it.Error, "timed out")) {
			t.Errorf("hostile prediction graded %+v, want a timed-out pred-error", it)
		}
	}

	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var recorded []grade.RecordedOptions
	for e, err := range l.Entries(context.Background(), ledger.Filter{Run: "hostile", Kind: "run.start"}) {
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Options grade.RecordedOptions `json:"grader_options"`
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, body.Options)
	}
	want := grade.DefaultOptions()
	want.BirdBudget, want.Timeout = time.Second, time.Second
	if diff := cmp.Diff([]grade.RecordedOptions{want.Record()}, recorded); diff != "" {
		t.Errorf("recorded grader options (-want +got):\n%s", diff)
	}
}
