package reproduce

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/evaluate"
)

// compareOutputs gives the verdict on each output rec recorded, against
// the digests the reproduction recorded (got) and the files it wrote.
func compareOutputs(ctx context.Context, l *ledger.Ledger, rec *runner.Recording, lo layout, got map[string]ledger.Digest) ([]runner.ReproducedOutput, error) {
	var out []runner.ReproducedOutput
	for _, name := range sortedKeys(rec.End.Outputs) {
		recorded := rec.End.Outputs[name]
		o := runner.ReproducedOutput{Name: name, Recorded: &recorded}
		var art runner.ArtifactBody
		for _, a := range rec.Artifacts {
			if a.Role == records.RoleOutput && a.Name == name {
				art = a
			}
		}
		o.Kind = string(art.Kind)
		d, ok := got[name]
		switch {
		case !ok:
			o.Verdict, o.At = runner.OutputMissing, "the reproduction did not write it"
		case d == recorded:
			o.Verdict, o.Reproduced = runner.OutputIdentical, &d
		default:
			o.Verdict, o.Reproduced = runner.OutputDiffers, &d
			if err := explain(ctx, l, art, lo, &o); err != nil {
				return nil, fmt.Errorf("output %s: %w", name, err)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// explain compares a differing output further: identical once relocated
// or as rlgate's own outcomes, or where it first differs.
func explain(ctx context.Context, l *ledger.Ledger, art runner.ArtifactBody, lo layout, o *runner.ReproducedOutput) error {
	src := lo.recorded(art.Path)
	dst, _ := lo.place(art.Path)
	moved, err := relocate(ctx, l, art, lo, dst)
	if err != nil || moved {
		if moved {
			o.Verdict, o.Relocated = runner.OutputIdentical, true
		}
		return err
	}
	at, outcomes, err := evalOutcomes(ctx, art, src, dst)
	switch {
	case err != nil:
		return err
	case outcomes:
		o.At, o.As = at, AsOutcomes
		if at == "" {
			// The stages after it read the recorded summary, as for a
			// relocated output; the reproduced one is the new run's.
			o.Verdict = runner.OutputIdentical
			raw, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, raw, 0o644)
		}
	case art.Kind == records.ArtifactCheckpoint:
		o.At, err = diffCheckpoint(ctx, l, art, src, dst)
	default:
		o.At, err = diffTree(ctx, l, art, src, dst)
	}
	return err
}

// relocateLimit bounds the files relocate reads whole.
const relocateLimit = 64 << 20

// relocate checks whether the tree or file at dst is the recorded output
// once every mention of the work directory's path in it is read as the
// stage's recorded directory: a stage that writes its own absolute
// directory into a file (rlgate data import's db_root) can only be
// compared so. If it is, the files are rewritten so, and the stages
// reproduced after it read exactly the recorded bytes.
func relocate(ctx context.Context, l *ledger.Ledger, art runner.ArtifactBody, lo layout, dst string) (bool, error) {
	if art.Kind == records.ArtifactCheckpoint || art.Manifest == nil {
		return false, nil
	}
	was, err := readManifest[manifests.DatasetManifest](l, *art.Manifest)
	if err != nil || was == nil {
		return false, err
	}
	now, err := manifests.HashTree(ctx, dst)
	if err != nil {
		return false, err
	}
	old := map[string]manifests.Node{}
	for _, n := range was.Nodes {
		old[n.Path] = n
	}
	type rewrite struct {
		path string
		data []byte
	}
	var rewrites []rewrite
	for _, n := range now.Nodes {
		o := old[n.Path]
		if n.Type != manifests.NodeFile || o.Digest == n.Digest {
			continue
		}
		if o.Type != manifests.NodeFile || n.Size > relocateLimit {
			return false, nil
		}
		p := filepath.Join(dst, filepath.FromSlash(n.Path))
		raw, err := os.ReadFile(p)
		if err != nil {
			return false, err
		}
		moved := bytes.ReplaceAll(raw, []byte(lo.work), []byte(lo.dir))
		if ledger.Sum(moved) != o.Digest {
			return false, nil
		}
		rewrites = append(rewrites, rewrite{p, moved})
	}
	for _, r := range rewrites {
		fi, err := os.Stat(r.path)
		if err != nil {
			return false, err
		}
		if err := os.WriteFile(r.path, r.data, fi.Mode().Perm()); err != nil {
			return false, err
		}
	}
	d, err := digestOf(ctx, dst)
	return err == nil && d == art.Digest.String(), err
}

// diffCheckpoint names the first tensor (by name) in which the checkpoint
// at dst differs from the recorded one, with its max |Δ| and how many
// elements differ. That needs the original bytes: the recorded path, when
// its model identity is still the recorded one. Without them the tensors
// whose digests differ are named, by their digests alone.
func diffCheckpoint(ctx context.Context, l *ledger.Ledger, art runner.ArtifactBody, src, dst string) (string, error) {
	if m, err := manifests.BuildCheckpointManifest(ctx, src); err == nil && m.Identity == art.Digest {
		d, err := manifests.DiffCheckpoints(ctx, manifests.CheckpointRef{Path: src, Manifest: m}, manifests.CheckpointRef{Path: dst}, manifests.Tolerance{})
		var mismatch *manifests.TensorMismatchError
		switch {
		case errors.As(err, &mismatch):
			return strings.Join(mismatch.Mismatches, "; "), nil
		case err != nil:
			return "", err
		}
		for _, t := range d.Tensors {
			if !t.Identical {
				return fmt.Sprintf("tensor %s: max |Δ| %.3g, %d of %d elements differ", t.Name, t.MaxAbsDelta, t.Changed, t.Elements), nil
			}
		}
		return "", nil
	}
	var was *manifests.CheckpointManifest
	if art.Manifest != nil {
		var err error
		if was, err = readManifest[manifests.CheckpointManifest](l, *art.Manifest); err != nil {
			return "", err
		}
	}
	now, err := manifests.BuildCheckpointManifest(ctx, dst)
	if err != nil {
		return "", err
	}
	if was == nil {
		return "the recorded manifest is not in the blob store", nil
	}
	digests := map[string]ledger.Digest{}
	for _, t := range was.Tensors {
		digests[t.Name] = t.Digest
	}
	var differ []string
	for _, t := range now.Tensors {
		if d, ok := digests[t.Name]; !ok || d != t.Digest {
			differ = append(differ, t.Name)
		}
		delete(digests, t.Name)
	}
	differ = append(differ, sortedKeys(digests)...)
	slices.Sort(differ)
	return fmt.Sprintf("tensors %s differ by digest (the original bytes are gone: %s no longer holds the recorded checkpoint)", strings.Join(differ, ", "), src), nil
}

// diffTree names the first path (in byte order) at which the file or tree
// at dst differs from the recorded manifest; for a file whose original
// bytes are at hand (in the blob store, or at the recorded path with the
// recorded digest), the first differing byte offset.
func diffTree(ctx context.Context, l *ledger.Ledger, art runner.ArtifactBody, src, dst string) (string, error) {
	if art.Manifest == nil {
		return "", nil
	}
	was, err := readManifest[manifests.DatasetManifest](l, *art.Manifest)
	if err != nil || was == nil {
		return "the recorded manifest is not in the blob store", err
	}
	now, err := manifests.HashTree(ctx, dst)
	if err != nil {
		return "", err
	}
	old, cur := map[string]manifests.Node{}, map[string]manifests.Node{}
	var paths []string
	for _, n := range was.Nodes {
		old[n.Path] = n
		paths = append(paths, n.Path)
	}
	for _, n := range now.Nodes {
		cur[n.Path] = n
		if _, ok := old[n.Path]; !ok {
			paths = append(paths, n.Path)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		o, inOld := old[p]
		n, inNew := cur[p]
		name := p
		if p == "." {
			name = filepath.Base(art.Path)
		}
		switch {
		case !inNew:
			return fmt.Sprintf("%s %s: the reproduction did not write it", o.Type, name), nil
		case !inOld:
			return fmt.Sprintf("%s %s: not in the original", n.Type, name), nil
		case o.Type != n.Type:
			return fmt.Sprintf("%s: was a %s, now a %s", name, o.Type, n.Type), nil
		case o.Type == manifests.NodeLink && o.Target != n.Target:
			return fmt.Sprintf("link %s: target %s, now %s", name, o.Target, n.Target), nil
		case o.Type == manifests.NodeFile && o.Digest != n.Digest:
			return fileDiff(ctx, l, o, filepath.Join(src, filepath.FromSlash(p)), filepath.Join(dst, filepath.FromSlash(p)), name)
		}
	}
	return "", nil
}

// fileDiff says at which byte offset the file at dst first differs from
// the recorded node, reading the original from the blob store or from
// its recorded path when that still has the recorded digest.
func fileDiff(ctx context.Context, l *ledger.Ledger, was manifests.Node, src, dst, name string) (string, error) {
	var orig io.ReadCloser
	if r, err := l.OpenBlob(was.Digest); err == nil {
		orig = r
	} else if d, _, err := manifests.HashFile(ctx, src); err == nil && d == was.Digest {
		if orig, err = os.Open(src); err != nil {
			return "", err
		}
	}
	if orig == nil {
		return fmt.Sprintf("file %s: recorded %s, the original bytes are gone (not in the blob store; %s changed)", name, was.Digest, src), nil
	}
	defer orig.Close()
	f, err := os.Open(dst)
	if err != nil {
		return "", err
	}
	defer f.Close()
	off, err := firstDifference(orig, f)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("file %s: byte offset %d", name, off), nil
}

// firstDifference returns the offset of the first byte at which a and b
// differ, or the length of the shorter one when it is a prefix of the other.
func firstDifference(a, b io.Reader) (int64, error) {
	ra, rb := bufio.NewReaderSize(a, 1<<16), bufio.NewReaderSize(b, 1<<16)
	var off int64
	for {
		pa, errA := ra.Peek(1 << 16)
		pb, errB := rb.Peek(1 << 16)
		n := min(len(pa), len(pb))
		if i := mismatch(pa[:n], pb[:n]); i >= 0 {
			return off + int64(i), nil
		}
		if n == 0 {
			if errA != nil && errA != io.EOF {
				return 0, errA
			}
			if errB != nil && errB != io.EOF {
				return 0, errB
			}
			return off, nil
		}
		ra.Discard(n)
		rb.Discard(n)
		off += int64(n)
	}
}

func mismatch(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// compareMetrics compares every metric series the two runs logged point
// by point; nil when neither logged any.
func compareMetrics(ctx context.Context, l *ledger.Ledger, was, now string) (*runner.ReproducedOutput, error) {
	keys := map[string]bool{}
	for _, run := range []string{was, now} {
		ks, err := l.MetricKeys(ctx, run)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	o := &runner.ReproducedOutput{Name: "metrics", Kind: records.KindMetrics, Verdict: runner.OutputIdentical}
	for _, k := range sortedKeys(keys) {
		a, _, err := l.Series(ctx, was, k)
		if err != nil {
			return nil, err
		}
		b, _, err := l.Series(ctx, now, k)
		if err != nil {
			return nil, err
		}
		if at := seriesDiff(k, a, b); at != "" {
			o.Verdict, o.At = runner.OutputDiffers, at
			return o, nil
		}
	}
	return o, nil
}

// seriesDiff says where series b first differs from a; "" when it does not.
func seriesDiff(key string, a, b []ledger.MetricPoint) string {
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			return fmt.Sprintf("%s: step %d: not in the original (%d points, reproduced %d)", key, b[i].Step, len(a), len(b))
		case i >= len(b):
			return fmt.Sprintf("%s: step %d: not reproduced (%d points, reproduced %d)", key, a[i].Step, len(a), len(b))
		case a[i].Step != b[i].Step:
			return fmt.Sprintf("%s: point %d: step %d, reproduced step %d", key, i, a[i].Step, b[i].Step)
		case math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) && !(math.IsNaN(a[i].Value) && math.IsNaN(b[i].Value)):
			return fmt.Sprintf("%s: step %d: recorded %v, reproduced %v", key, a[i].Step, a[i].Value, b[i].Value)
		}
	}
	return ""
}

// AsOutcomes marks an output compared as rlgate's own outcomes (Output.As).
const AsOutcomes = "outcomes"

// evalOutcomes compares a file written by rlgate eval --json with the
// recorded one as rlgate's own outcomes, task by task (each item: task,
// verdict, correct, reward, the chosen episode's stop reason, turns and
// tokens), with the totals: the summary also
// holds the rollout's timings and the ledger entries' numbers, which no
// second run repeats. ok is false when either file is not such a summary
// or the recorded one is no longer at its recorded path with its recorded
// digest; then the file is compared by its bytes.
func evalOutcomes(ctx context.Context, art runner.ArtifactBody, src, dst string) (at string, ok bool, err error) {
	read := func(p string) *evaluate.EvalSummary {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var s evaluate.EvalSummary
		if json.Unmarshal(raw, &s) != nil || s.TrajectorySummary == nil || s.RolloutSummary == nil || s.Run == "" || s.Rollout == "" {
			return nil
		}
		return &s
	}
	if d, err := digestOf(ctx, src); err != nil || d != art.Digest.String() {
		return "", false, err
	}
	was, now := read(src), read(dst)
	if was == nil || now == nil {
		return "", false, nil
	}
	for i := range max(len(was.Items), len(now.Items)) {
		if i >= len(was.Items) || i >= len(now.Items) {
			return fmt.Sprintf("%d tasks graded, reproduced %d", len(was.Items), len(now.Items)), true, nil
		}
		a, err := json.Marshal(was.Items[i])
		if err != nil {
			return "", false, err
		}
		b, err := json.Marshal(now.Items[i])
		if err != nil {
			return "", false, err
		}
		if !bytes.Equal(a, b) {
			return fmt.Sprintf("task %s: recorded %s, reproduced %s", was.Items[i].TaskID, a, b), true, nil
		}
	}
	if was.Correct != now.Correct || was.Total != now.Total {
		return fmt.Sprintf("%d of %d correct, reproduced %d of %d", was.Correct, was.Total, now.Correct, now.Total), true, nil
	}
	return "", true, nil
}
