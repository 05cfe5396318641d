package manifests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// Tolerance is the element rule of DiffCheckpoints: a float element changed
// when |a−b| > ATol + RTol·|a|, a as in checkpoint A.
type Tolerance struct {
	ATol float64 `json:"atol"`
	RTol float64 `json:"rtol"`
}

// DefaultTolerance is the rule the weights audit uses.
var DefaultTolerance = Tolerance{ATol: 1e-8, RTol: 1e-6}

// CheckpointRef names a checkpoint for DiffCheckpoints. Manifest, if set, must
// be what BuildCheckpointManifest returned for Path; when both sides have one,
// tensors with equal digests are not read at all.
type CheckpointRef struct {
	Path     string
	Manifest *CheckpointManifest
}

// CheckpointDiff is how checkpoint B differs from checkpoint A, tensor by
// tensor. Its JSON form is a stable contract: fields are only ever added.
type CheckpointDiff struct {
	Tolerance        Tolerance     `json:"tolerance"`
	Tensors          []TensorDelta `json:"tensors"` // sorted by name
	TensorsChanged   int           `json:"tensors_changed"`
	TensorsIdentical int           `json:"tensors_identical"`
	Elements         int64         `json:"elements"`
	ElementsChanged  int64         `json:"elements_changed"`
}

// TensorDelta describes Δ = B − A for one tensor, with values decoded to
// float64. Elements whose Δ is not finite (NaN or an infinity on one side
// only), or too large to square (|Δ| > 1.3e154), count as changed and as
// NonFinite and stay out of the |Δ| statistics; NaN against NaN and an
// infinity against the same infinity are unchanged.
type TensorDelta struct {
	Name     string  `json:"name"`
	DType    DType   `json:"dtype"`
	Shape    []int64 `json:"shape"`
	Elements int64   `json:"elements"`
	// Identical means bit-for-bit equal bytes.
	Identical bool `json:"identical"`
	// Changed counts elements outside the tolerance for float dtypes, and
	// elements with any differing bit for the others.
	Changed         int64   `json:"changed"`
	ChangedFraction float64 `json:"changed_fraction"`
	NonFinite       int64   `json:"non_finite"`
	MeanAbsDelta    float64 `json:"mean_abs_delta"` // over finite Δ
	MaxAbsDelta     float64 `json:"max_abs_delta"`
	L2Delta         float64 `json:"l2_delta"` // ‖Δ‖₂
	// RelL2Delta is ‖Δ‖₂/‖A‖₂; nil (JSON null) when A is all zeros and Δ is
	// not, where the ratio is infinite.
	RelL2Delta *float64 `json:"rel_l2_delta"`
}

// TensorMismatchError lists every tensor whose name, dtype or shape differs
// between two checkpoints, so a user sees them all at once.
type TensorMismatchError struct {
	A, B       string
	Mismatches []string // one per tensor, sorted by name
}

func (e *TensorMismatchError) Error() string {
	return fmt.Sprintf("diff checkpoints A=%s B=%s: %d tensors do not match: %s",
		e.A, e.B, len(e.Mismatches), strings.Join(e.Mismatches, "; "))
}

func (e *TensorMismatchError) Unwrap() error { return ErrTensorMismatch }

// Work is cut into segments of diffSegment elements so that one large tensor
// still spreads over every worker. A segment is read diffRead elements at a
// time and decoded and summed diffBlock elements at a time, so the decoded
// values stay in cache. Each block's sums are reduced in a fixed order and
// merged in block, then segment, order: results depend on these constants
// only, never on scheduling or on the machine.
const (
	diffSegment = 1 << 22
	diffRead    = 1 << 18
	diffBlock   = 1 << 12
)

// DiffCheckpoints compares checkpoint B with A tensor by tensor. The two must
// hold the same tensor names, dtypes and shapes, or the error is a
// *TensorMismatchError listing every difference. Files are streamed in
// chunks on GOMAXPROCS workers; nothing is held whole in memory.
func DiffCheckpoints(ctx context.Context, a, b CheckpointRef, tol Tolerance) (*CheckpointDiff, error) {
	ca, err := openCheckpoint(a.Path)
	if err != nil {
		return nil, err
	}
	defer ca.Close()
	cb, err := openCheckpoint(b.Path)
	if err != nil {
		return nil, err
	}
	defer cb.Close()
	digestsA, err := manifestDigests(ca, a)
	if err != nil {
		return nil, err
	}
	digestsB, err := manifestDigests(cb, b)
	if err != nil {
		return nil, err
	}
	names, err := matchTensors(ca, cb, a.Path, b.Path)
	if err != nil {
		return nil, err
	}

	type unit struct {
		tensor      int
		first, last int64 // element range
	}
	var units []unit
	out := &CheckpointDiff{Tolerance: tol, Tensors: make([]TensorDelta, len(names))}
	for i, name := range names {
		t := ca.tensors[name].info
		n := t.Len() / int64(t.DType.Size())
		out.Tensors[i] = TensorDelta{Name: name, DType: t.DType, Shape: t.Shape, Elements: n}
		if digestsA != nil && digestsB != nil && digestsA[name] == digestsB[name] {
			continue
		}
		for first := int64(0); first < n; first += diffSegment {
			units = append(units, unit{i, first, min(first+diffSegment, n)})
		}
	}
	parts := make([]deltaAcc, len(units))
	err = parallel(ctx, len(units), func() func(context.Context, int) error {
		w := newDiffWorker()
		return func(ctx context.Context, i int) error {
			u := units[i]
			name := names[u.tensor]
			acc, err := w.segment(ctx, ca.tensors[name], cb.tensors[name], u.first, u.last, tol)
			if err != nil {
				return fmt.Errorf("diff tensor %q: %w", name, err)
			}
			parts[i] = acc
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	accs := make([]deltaAcc, len(names))
	for i, u := range units {
		accs[u.tensor].merge(parts[i])
	}
	for i := range out.Tensors {
		d := &out.Tensors[i]
		accs[i].finish(d)
		out.Elements += d.Elements
		out.ElementsChanged += d.Changed
		if d.Changed > 0 {
			out.TensorsChanged++
		}
		if d.Identical {
			out.TensorsIdentical++
		}
	}
	return out, nil
}

// manifestDigests returns the tensor digests of ref's manifest, after
// checking that every safetensors header on disk is the one it recorded;
// nil without a manifest.
func manifestDigests(c *checkpoint, ref CheckpointRef) (map[string]ledger.Digest, error) {
	if ref.Manifest == nil {
		return nil, nil
	}
	headers := map[string]*ledger.Digest{}
	for _, f := range ref.Manifest.Files {
		headers[f.Path] = f.HeaderDigest
	}
	for _, sf := range c.shards {
		if hd := headers[sf.Name]; hd == nil || *hd != sf.HeaderDigest {
			return nil, fmt.Errorf("diff checkpoint %s: its manifest does not record the header of %s as it is on disk; rebuild the manifest", ref.Path, sf.Name)
		}
	}
	m := make(map[string]ledger.Digest, len(ref.Manifest.Tensors))
	for _, t := range ref.Manifest.Tensors {
		m[t.Name] = t.Digest
	}
	return m, nil
}

// matchTensors returns the tensor names of A and B, sorted, or a
// *TensorMismatchError listing every name, dtype and shape that differs.
func matchTensors(ca, cb *checkpoint, pathA, pathB string) ([]string, error) {
	var names, bad []string
	for name, ta := range ca.tensors {
		tb, ok := cb.tensors[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%q: only in A", name))
		case ta.info.DType != tb.info.DType:
			bad = append(bad, fmt.Sprintf("%q: dtype %s in A, %s in B", name, ta.info.DType, tb.info.DType))
		case !slices.Equal(ta.info.Shape, tb.info.Shape):
			bad = append(bad, fmt.Sprintf("%q: shape %v in A, %v in B", name, ta.info.Shape, tb.info.Shape))
		default:
			names = append(names, name)
		}
	}
	for name := range cb.tensors {
		if _, ok := ca.tensors[name]; !ok {
			bad = append(bad, fmt.Sprintf("%q: only in B", name))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, &TensorMismatchError{A: pathA, B: pathB, Mismatches: bad}
	}
	slices.Sort(names)
	return names, nil
}

// diffWorker owns one worker's read and decode buffers, sized for the
// widest dtype.
type diffWorker struct {
	rawA, rawB []byte
	valA, valB []float64
}

func newDiffWorker() *diffWorker {
	return &diffWorker{
		rawA: make([]byte, diffRead*8), rawB: make([]byte, diffRead*8),
		valA: make([]float64, diffBlock), valB: make([]float64, diffBlock),
	}
}

// segment accumulates Δ over elements [first, last) of one tensor.
func (w *diffWorker) segment(ctx context.Context, ta, tb tensorAt, first, last int64, tol Tolerance) (deltaAcc, error) {
	info := dtypes[ta.info.DType]
	size := int64(info.size)
	var acc deltaAcc
	for pos := first; pos < last; pos += diffRead {
		if err := ctx.Err(); err != nil {
			return acc, err
		}
		n := min(diffRead, last-pos)
		ra, rb := w.rawA[:n*size], w.rawB[:n*size]
		if err := readFull(ta, ra, pos*size); err != nil {
			return acc, err
		}
		if err := readFull(tb, rb, pos*size); err != nil {
			return acc, err
		}
		acc.differ = acc.differ || !bytes.Equal(ra, rb)
		for off := int64(0); off < n; off += diffBlock {
			m := min(diffBlock, n-off)
			ba, bb := ra[off*size:(off+m)*size], rb[off*size:(off+m)*size]
			va, vb := w.valA[:m], w.valB[:m]
			info.decode(va, ba)
			info.decode(vb, bb)
			changed := acc.add(va, vb, tol)
			if info.kind != kindFloat {
				changed = countDiffering(ba, bb, int(size))
			}
			acc.changed += changed
		}
	}
	return acc, nil
}

// readFull reads len(p) bytes of tensor t from offset off within it.
func readFull(t tensorAt, p []byte, off int64) error {
	_, err := t.shard.f.ReadAt(p, t.shard.DataStart+t.info.Begin+off)
	if err == io.EOF {
		err = fmt.Errorf("%s: %w", t.shard.Name, io.ErrUnexpectedEOF) // the file shrank since its header was read
	}
	return err
}

// countDiffering counts the size-byte elements of a and b that differ in
// any bit.
func countDiffering(a, b []byte, size int) int64 {
	var n int64
	for i := 0; i < len(a); i += size {
		if string(a[i:i+size]) != string(b[i:i+size]) {
			n++
		}
	}
	return n
}
