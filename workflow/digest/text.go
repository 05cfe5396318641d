package digest

import (
	"fmt"
	"io"
	"slices"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/workflow/textout"
)

// WriteTrees writes each tree's digest and, where it was recorded, its
// entry (rlgate hash).
func WriteTrees(w io.Writer, out []TreeDigest) error {
	for _, r := range out {
		fmt.Fprintf(w, "%s  %s  (%d files, %d bytes)\n", r.Digest, r.Root, r.Files, r.Bytes)
		if r.Seq != 0 {
			fmt.Fprintf(w, "  recorded as dataset %q, entry %d, manifest %s\n", r.Name, r.Seq, r.Manifest)
		}
	}
	return nil
}

// WriteText writes the model identity, every file and tensor with its
// digest, the totals and, where it was recorded, its entry (rlgate ckpt
// digest).
func (r *CheckpointDigest) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s  %s  (model identity)\n", r.Identity, r.Path)
	t := textout.NewTable(w, "file", "kind", "bytes", "digest")
	for _, f := range r.Files {
		t.Append(f.Path, f.Kind, fmt.Sprint(f.Size), f.Digest.String())
	}
	if err := t.Render(); err != nil {
		return err
	}
	t = textout.NewTable(w, "tensor", "dtype", "shape", "bytes", "digest")
	for _, ts := range r.Tensors {
		t.Append(ts.Name, string(ts.DType), fmt.Sprint(ts.Shape), fmt.Sprint(ts.Size), ts.Digest.String())
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d files, %d tensors, %d bytes\n", len(r.Files), len(r.Tensors), r.Size)
	if r.Seq != 0 {
		fmt.Fprintf(w, "recorded as checkpoint %q, entry %d, manifest %s\n", r.Name, r.Seq, r.Manifest)
	}
	return nil
}

// WriteText writes every tensor's change, most changed first, then the
// identities when both were hashed and the totals (rlgate ckpt diff).
func (r *Diffed) WriteText(w io.Writer) error {
	t := textout.NewTable(w, "tensor", "dtype", "changed", "changed %", "mean |Δ|", "max |Δ|", "‖Δ‖", "‖Δ‖/‖A‖")
	var nonFinite int64
	for _, d := range slices.SortedStableFunc(slices.Values(r.Tensors), audit.CompareRelChange) {
		t.Append(d.Name, string(d.DType), fmt.Sprint(d.Changed), fmt.Sprintf("%.4g", 100*d.ChangedFraction),
			fmt.Sprintf("%.4g", d.MeanAbsDelta), fmt.Sprintf("%.4g", d.MaxAbsDelta), fmt.Sprintf("%.4g", d.L2Delta), audit.FormatRelChange(d.RelL2Delta))
		nonFinite += d.NonFinite
	}
	if err := t.Render(); err != nil {
		return err
	}
	if r.IdentityA != nil {
		fmt.Fprintf(w, "A %s  %s\nB %s  %s\n", r.IdentityA, r.A, r.IdentityB, r.B)
	}
	fmt.Fprintf(w, "%d of %d tensors changed, %d bit-identical; %d of %d elements changed (%.4g%%) with |a−b| > %g + %g·|a|",
		r.TensorsChanged, len(r.Tensors), r.TensorsIdentical, r.ElementsChanged, r.Elements,
		100*float64(r.ElementsChanged)/float64(max(r.Elements, 1)), r.Tolerance.ATol, r.Tolerance.RTol)
	if nonFinite > 0 {
		fmt.Fprintf(w, "; %d with a non-finite Δ", nonFinite)
	}
	_, err := fmt.Fprintln(w)
	return err
}
