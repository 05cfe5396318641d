package audit

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
)

// The checks of the weights audit, as Finding.Check names them.
const (
	// CheckTrainedChanged passes when at least one element of the trained
	// checkpoint differs from the base beyond the tolerance.
	CheckTrainedChanged = "trained-changed"
	// CheckNoUpdateIdentical passes when the No-update control (lr = 0)
	// holds the base's tensors with equal digests, every one of them.
	CheckNoUpdateIdentical = "noupdate-identical"
	// CheckEvaluatedIsTrained passes when the model identity an evaluation
	// served is the trained checkpoint's; it is made only when one is given.
	CheckEvaluatedIsTrained = "evaluated-is-trained"
)

// TopLayers is how many of the most changed tensors the weights audit
// reports.
const TopLayers = 5

// Finding is one check of an audit with the evidence it rests on. Audits
// return every finding, passing or not; an error means an audit could not
// run at all.
type Finding struct {
	Check    string `json:"check"`
	OK       bool   `json:"ok"`
	Message  string `json:"message"`
	Evidence any    `json:"evidence,omitempty"`
	// Seqs are the ledger entries holding the facts the finding rests on,
	// so a reviewer can open each with rlgate show SEQ.
	Seqs []int64 `json:"seqs,omitempty"`
}

// WeightsOptions names the checkpoints of a weights audit: each a
// directory or a .safetensors file, as manifests.BuildCheckpointManifest
// takes them.
type WeightsOptions struct {
	Base    string
	Trained string
	// NoUpdate is the No-update control trained with lr = 0. Without it the
	// audit cannot show that training, not the pipeline around it, changed
	// the weights, so it fails.
	NoUpdate string
	// Evaluated, when set, is the model identity an evaluation served.
	Evaluated *ledger.Digest
	// Tolerance is the element rule; nil means manifests.DefaultTolerance.
	Tolerance *manifests.Tolerance
}

// WeightsReport is the result of AuditWeights, as recorded in the ledger.
// Its JSON form is a stable contract: fields are only ever added.
type WeightsReport struct {
	OK        bool                `json:"ok"`
	Failed    int                 `json:"failed"` // findings that did not pass
	Tolerance manifests.Tolerance `json:"tolerance"`
	Base      WeightsCheckpoint   `json:"base"`
	Trained   WeightsCheckpoint   `json:"trained"`
	NoUpdate  *WeightsCheckpoint  `json:"noupdate,omitempty"`
	Evaluated *ledger.Digest      `json:"evaluated,omitempty"`
	Findings  []Finding           `json:"findings"`
	Seq       int64               `json:"seq,omitempty"` // the audit.weights entry, once recorded
}

// WeightsCheckpoint is a checkpoint the weights audit read.
type WeightsCheckpoint struct {
	Path     string        `json:"path"`
	Identity ledger.Digest `json:"model_identity"`
	Tensors  int           `json:"tensors"`
	Size     int64         `json:"size"`
	// Manifest is the blob holding the checkpoint's manifest, with every
	// tensor digest the audit compared; set by Record.
	Manifest *ledger.Digest `json:"manifest,omitempty"`

	manifest *manifests.CheckpointManifest
}

// ChangeEvidence backs CheckTrainedChanged: how many tensors and elements
// changed, and the TopLayers tensors with the largest ‖Δ‖/‖A‖. Mismatches,
// when set, list the tensors whose name, dtype or shape differ, and nothing
// else was compared.
type ChangeEvidence struct {
	Tensors          int                     `json:"tensors"`
	TensorsChanged   int                     `json:"tensors_changed"`
	TensorsIdentical int                     `json:"tensors_identical"`
	Elements         int64                   `json:"elements"`
	ElementsChanged  int64                   `json:"elements_changed"`
	Top              []manifests.TensorDelta `json:"top"`
	Mismatches       []string                `json:"mismatches,omitempty"`
}

// NoUpdateEvidence backs CheckNoUpdateIdentical: every tensor whose name,
// dtype, shape or digest differs between base and No-update, by name.
type NoUpdateEvidence struct {
	Tensors   int                `json:"tensors"` // in the base
	Differing []TensorDifference `json:"differing"`
}

// TensorDifference is one tensor that is not the same in two checkpoints.
type TensorDifference struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// AuditWeights checks that training changed the weights and nothing else
// did: the trained checkpoint differs from the base in at least one element
// (manifests.DiffCheckpoints' element rule), the No-update control equals
// the base tensor by tensor (every digest), and, when given, the evaluated
// identity is the trained one. It hashes each checkpoint once and diffs
// only the tensors whose digests differ. It returns every finding; an
// error means a checkpoint could not be read.
func AuditWeights(ctx context.Context, opts WeightsOptions) (*WeightsReport, error) {
	if opts.Base == "" || opts.Trained == "" {
		return nil, errors.New("audit weights: a base and a trained checkpoint are required")
	}
	r := &WeightsReport{Tolerance: manifests.DefaultTolerance, Evaluated: opts.Evaluated, Findings: []Finding{}}
	if opts.Tolerance != nil {
		r.Tolerance = *opts.Tolerance
	}
	var err error
	if r.Base, err = readCheckpoint(ctx, "base", opts.Base); err != nil {
		return nil, err
	}
	if r.Trained, err = readCheckpoint(ctx, "trained", opts.Trained); err != nil {
		return nil, err
	}
	if opts.NoUpdate != "" {
		nu, err := readCheckpoint(ctx, "noupdate", opts.NoUpdate)
		if err != nil {
			return nil, err
		}
		r.NoUpdate = &nu
	}

	changed, err := r.trainedChanged(ctx)
	if err != nil {
		return nil, err
	}
	r.add(changed)
	r.add(r.noUpdateIdentical())
	if r.Evaluated != nil {
		r.add(r.evaluatedIsTrained())
	}
	return r, nil
}

// readCheckpoint hashes the checkpoint at path; role names it in errors.
func readCheckpoint(ctx context.Context, role, path string) (WeightsCheckpoint, error) {
	m, err := manifests.BuildCheckpointManifest(ctx, path)
	if err != nil {
		return WeightsCheckpoint{}, fmt.Errorf("audit weights: %s: %w", role, err)
	}
	return WeightsCheckpoint{Path: path, Identity: m.Identity, Tensors: len(m.Tensors), Size: m.Size, manifest: m}, nil
}

// add appends f, keeping OK and Failed in step with the findings.
func (r *WeightsReport) add(f Finding) {
	r.Findings = append(r.Findings, f)
	if !f.OK {
		r.Failed++
	}
	r.OK = r.Failed == 0
}

// trainedChanged diffs trained against base; tensors with equal digests
// are skipped.
func (r *WeightsReport) trainedChanged(ctx context.Context) (Finding, error) {
	f := Finding{Check: CheckTrainedChanged}
	d, err := manifests.DiffCheckpoints(ctx,
		manifests.CheckpointRef{Path: r.Base.Path, Manifest: r.Base.manifest},
		manifests.CheckpointRef{Path: r.Trained.Path, Manifest: r.Trained.manifest}, r.Tolerance)
	var mismatch *manifests.TensorMismatchError
	if errors.As(err, &mismatch) {
		f.Message = fmt.Sprintf("trained does not hold the base's tensors, so it is not a training of this base; %d differ in name, dtype or shape (A: base, B: trained): %s",
			len(mismatch.Mismatches), strings.Join(mismatch.Mismatches, "; "))
		f.Evidence = ChangeEvidence{Top: []manifests.TensorDelta{}, Mismatches: mismatch.Mismatches}
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("audit weights: %w", err)
	}
	ev := ChangeEvidence{Tensors: len(d.Tensors), TensorsChanged: d.TensorsChanged, TensorsIdentical: d.TensorsIdentical,
		Elements: d.Elements, ElementsChanged: d.ElementsChanged, Top: mostChanged(d.Tensors, TopLayers)}
	f.Evidence = ev
	rule := fmt.Sprintf("|Δ| > %g + %g·|base|", r.Tolerance.ATol, r.Tolerance.RTol)
	switch {
	case r.Trained.Identity == r.Base.Identity:
		f.Message = fmt.Sprintf("no tensor changed: trained has the base's model identity %s", r.Base.Identity)
		return f, nil
	case d.ElementsChanged == 0:
		f.Message = fmt.Sprintf("no tensor changed: no element of the %d tensors differs beyond %s; %d differ in bits below it",
			len(d.Tensors), rule, len(d.Tensors)-d.TensorsIdentical)
		return f, nil
	}
	f.OK = true
	top := ev.Top[0]
	f.Message = fmt.Sprintf("%d of %d tensors changed, %d of %d elements (%s); most: %q, ‖Δ‖/‖A‖ %s",
		d.TensorsChanged, len(d.Tensors), d.ElementsChanged, d.Elements, rule, top.Name, FormatRelChange(top.RelL2Delta))
	return f, nil
}

// mostChanged returns up to n changed tensors, largest ‖Δ‖/‖A‖ first (an
// infinite ratio, A all zeros, first of all), ties by name.
func mostChanged(ts []manifests.TensorDelta, n int) []manifests.TensorDelta {
	changed := []manifests.TensorDelta{}
	for _, t := range ts {
		if t.Changed > 0 {
			changed = append(changed, t)
		}
	}
	slices.SortStableFunc(changed, CompareRelChange)
	return changed[:min(n, len(changed))]
}

// CompareRelChange orders tensor deltas by ‖Δ‖/‖A‖, largest first, with an
// infinite ratio (nil: A all zeros, Δ not) before any finite one, then by
// name; it is how reports rank the layers that changed most.
func CompareRelChange(a, b manifests.TensorDelta) int {
	switch {
	case a.RelL2Delta == nil && b.RelL2Delta == nil:
	case a.RelL2Delta == nil:
		return -1
	case b.RelL2Delta == nil:
		return 1
	default:
		if c := cmp.Compare(*b.RelL2Delta, *a.RelL2Delta); c != 0 {
			return c
		}
	}
	return strings.Compare(a.Name, b.Name)
}

// FormatRelChange prints a TensorDelta's ‖Δ‖/‖A‖ the way reports show it:
// "inf" when A is all zeros and Δ is not.
func FormatRelChange(rel *float64) string {
	if rel == nil {
		return "inf"
	}
	return fmt.Sprintf("%.4g", *rel)
}

// noUpdateIdentical compares the No-update control's tensor digests with
// the base's.
func (r *WeightsReport) noUpdateIdentical() Finding {
	f := Finding{Check: CheckNoUpdateIdentical}
	if r.NoUpdate == nil {
		f.Message = "no No-update control given: without a run trained with lr = 0 that leaves every tensor as it was, a change cannot be put down to training"
		return f
	}
	diffs := tensorDifferences(r.Base.manifest.Tensors, r.NoUpdate.manifest.Tensors)
	f.Evidence = NoUpdateEvidence{Tensors: r.Base.Tensors, Differing: diffs}
	if len(diffs) > 0 {
		names := make([]string, len(diffs))
		for i, d := range diffs {
			names[i] = strconv.Quote(d.Name)
		}
		f.Message = fmt.Sprintf("the No-update control differs from the base in %d of %d tensors: %s", len(diffs), r.Base.Tensors, strings.Join(names, ", "))
		return f
	}
	f.OK = true
	f.Message = fmt.Sprintf("the No-update control equals the base in all %d tensor digests (model identity %s)", r.Base.Tensors, r.Base.Identity)
	return f
}

// tensorDifferences lists, by name, every tensor that is in only one of
// base and other, or whose dtype, shape or digest differs.
func tensorDifferences(base, other []manifests.CheckpointTensor) []TensorDifference {
	byName := make(map[string]manifests.CheckpointTensor, len(base))
	for _, t := range base {
		byName[t.Name] = t
	}
	out := []TensorDifference{}
	seen := make(map[string]bool, len(other))
	for _, o := range other {
		seen[o.Name] = true
		b, ok := byName[o.Name]
		switch {
		case !ok:
			out = append(out, TensorDifference{o.Name, "only in the No-update control"})
		case b.DType != o.DType:
			out = append(out, TensorDifference{o.Name, fmt.Sprintf("dtype %s in base, %s in No-update", b.DType, o.DType)})
		case !slices.Equal(b.Shape, o.Shape):
			out = append(out, TensorDifference{o.Name, fmt.Sprintf("shape %v in base, %v in No-update", b.Shape, o.Shape)})
		case b.Digest != o.Digest:
			out = append(out, TensorDifference{o.Name, fmt.Sprintf("digest %s in base, %s in No-update", b.Digest, o.Digest)})
		}
	}
	for _, b := range base {
		if !seen[b.Name] {
			out = append(out, TensorDifference{b.Name, "only in the base"})
		}
	}
	slices.SortFunc(out, func(a, b TensorDifference) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// evaluatedIsTrained compares the evaluated identity with the trained one.
func (r *WeightsReport) evaluatedIsTrained() Finding {
	f := Finding{Check: CheckEvaluatedIsTrained, OK: *r.Evaluated == r.Trained.Identity}
	if f.OK {
		f.Message = fmt.Sprintf("the evaluated model %s is the trained checkpoint", r.Evaluated)
		return f
	}
	f.Message = fmt.Sprintf("the evaluated model %s is not the trained checkpoint %s", r.Evaluated, r.Trained.Identity)
	switch {
	case *r.Evaluated == r.Base.Identity:
		f.Message += "; it is the base"
	case r.NoUpdate != nil && *r.Evaluated == r.NoUpdate.Identity:
		f.Message += "; it is the No-update control"
	}
	return f
}

// Record stores the manifest of each checkpoint read as a blob, so that the
// ledger alone holds every tensor digest the audit compared, then appends
// the report as an audit.weights entry naming them, and sets Seq.
func (r *WeightsReport) Record(ctx context.Context, l *ledger.Ledger) error {
	var blobs []ledger.Digest
	for _, c := range []*WeightsCheckpoint{&r.Base, &r.Trained, r.NoUpdate} {
		if c == nil {
			continue
		}
		body, err := ledger.CanonicalJSON(c.manifest)
		if err != nil {
			return fmt.Errorf("record weights audit: %w", err)
		}
		blob, _, err := l.PutBlob(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("record weights audit: %w", err)
		}
		c.Manifest = &blob
		blobs = append(blobs, blob)
	}
	es, err := l.Append(ctx, ledger.Record{Kind: records.KindWeights, Body: r, Blobs: blobs})
	if err != nil {
		return err
	}
	r.Seq = es[0].Seq
	return nil
}
