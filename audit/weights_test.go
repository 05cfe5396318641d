package audit

import (
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/manifests/manifeststest"
)

// sample is a real safetensors file (one tensor of each integer and float
// dtype) that serves as the base model.
const sample = "../testdata/safetensors/overall.safetensors"

// checkpoints are the inputs of the weights audit tests: the shared
// checkpoints, and a file with other tensors than the sample's.
type checkpoints struct {
	manifeststest.Checkpoints
	extra string
}

func writeCheckpoints(t *testing.T) checkpoints {
	t.Helper()
	return checkpoints{manifeststest.WriteCheckpoints(t, sample), filepath.Join("..", "testdata", "safetensors", "f.safetensors")}
}

func audit(t *testing.T, opts WeightsOptions) *WeightsReport {
	t.Helper()
	r, err := AuditWeights(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// finding returns the finding of check, failing the test without one.
func finding(t *testing.T, r *WeightsReport, check string) Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", check, r.Findings)
	return Finding{}
}

func TestAuditWeights(t *testing.T) {
	c := writeCheckpoints(t)
	identity := func(path string) *ledger.Digest {
		m, err := manifests.BuildCheckpointManifest(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		return &m.Identity
	}
	trainedID, baseID := identity(c.Trained), identity(c.Base)
	if *identity(c.Resharded) != *trainedID {
		t.Fatal("a re-sharded copy of the trained weights has another identity")
	}
	tests := []struct {
		name   string
		opts   WeightsOptions
		failed map[string]string // check → text its message must hold; absent: passes
	}{
		{"pass", WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.NoUpdate, Evaluated: trainedID}, nil},
		{"evaluated re-sharded copy", WeightsOptions{Base: c.Base, Trained: c.Resharded, NoUpdate: c.NoUpdate, Evaluated: trainedID}, nil},
		{"trained is base", WeightsOptions{Base: c.Base, Trained: c.NoUpdate, NoUpdate: c.NoUpdate},
			map[string]string{CheckTrainedChanged: "no tensor changed: trained has the base's model identity"}},
		{"change below tolerance", WeightsOptions{Base: c.Base, Trained: c.BelowTolerance, NoUpdate: c.NoUpdate},
			map[string]string{CheckTrainedChanged: "1 differ in bits below it"}},
		{"no-update changed", WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.ChangedD},
			map[string]string{CheckNoUpdateIdentical: `differs from the base in 1 of 9 tensors: "d"`}},
		{"no no-update", WeightsOptions{Base: c.Base, Trained: c.Trained},
			map[string]string{CheckNoUpdateIdentical: "no No-update control given"}},
		{"evaluated base", WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.NoUpdate, Evaluated: baseID},
			map[string]string{CheckEvaluatedIsTrained: "is not the trained checkpoint " + trainedID.String() + "; it is the base"}},
		{"trained other tensors", WeightsOptions{Base: c.Base, Trained: c.extra, NoUpdate: c.NoUpdate},
			map[string]string{CheckTrainedChanged: `8 differ in name, dtype or shape (A: base, B: trained): "B": only in A; "H": only in A`}},
		{"no-update other tensors", WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.extra},
			map[string]string{CheckNoUpdateIdentical: "in 8 of 9 tensors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := audit(t, tt.opts)
			want := 2
			if tt.opts.Evaluated != nil {
				want = 3
			}
			if len(r.Findings) != want || r.Failed != len(tt.failed) || r.OK != (len(tt.failed) == 0) {
				t.Errorf("ok %v, %d of %d findings failed, want %d of %d: %+v", r.OK, r.Failed, len(r.Findings), len(tt.failed), want, r.Findings)
			}
			for _, f := range r.Findings {
				msg, fails := tt.failed[f.Check]
				if f.OK == fails || !strings.Contains(f.Message, msg) {
					t.Errorf("%s: ok %v, message %q; want ok %v and %q", f.Check, f.OK, f.Message, !fails, msg)
				}
			}
		})
	}
}

// TestAuditWeightsEvidence checks what a reviewer reads: the counts, the
// most changed tensor, and every differing No-update tensor by digest.
func TestAuditWeightsEvidence(t *testing.T) {
	c := writeCheckpoints(t)
	r := audit(t, WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.ChangedD})
	ev := finding(t, r, CheckTrainedChanged).Evidence.(ChangeEvidence)
	if ev.Tensors != 9 || ev.TensorsChanged != 1 || ev.TensorsIdentical != 8 || ev.ElementsChanged != 1 || ev.Elements != 54 {
		t.Errorf("change evidence %+v", ev)
	}
	if len(ev.Top) != 1 || ev.Top[0].Name != "f" || ev.Top[0].MaxAbsDelta != 1 || *ev.Top[0].RelL2Delta <= 0 {
		t.Errorf("top layers %+v, want tensor f with |Δ| 1", ev.Top)
	}
	nu := finding(t, r, CheckNoUpdateIdentical).Evidence.(NoUpdateEvidence)
	if len(nu.Differing) != 1 || nu.Differing[0].Name != "d" || !strings.HasPrefix(nu.Differing[0].Detail, "digest blake3:") {
		t.Errorf("no-update evidence %+v", nu)
	}
	if r.Tolerance != manifests.DefaultTolerance || r.Base.Tensors != 9 || r.NoUpdate.Path != c.ChangedD {
		t.Errorf("report %+v", r)
	}
}

// TestMostChanged checks the ranking of the top layers: an infinite ratio
// first, then by ‖Δ‖/‖A‖, ties by name, unchanged tensors left out.
func TestMostChanged(t *testing.T) {
	rel := func(f float64) *float64 { return &f }
	ts := []manifests.TensorDelta{
		{Name: "a", Changed: 1, RelL2Delta: rel(0.1)},
		{Name: "b", Changed: 0, RelL2Delta: rel(0)},
		{Name: "c", Changed: 3, RelL2Delta: nil},
		{Name: "d", Changed: 1, RelL2Delta: rel(0.5)},
		{Name: "e", Changed: 1, RelL2Delta: rel(0.1)},
	}
	var names []string
	for _, d := range mostChanged(ts, 3) {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "c,d,a" {
		t.Errorf("most changed %s, want c,d,a", got)
	}
}

func TestRecordWeights(t *testing.T) {
	c := writeCheckpoints(t)
	l := ledgertest.New(t) // verified when the test ends
	r := audit(t, WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.NoUpdate})
	if err := r.Record(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	e, err := l.EntryBySeq(t.Context(), r.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != records.KindWeights || len(e.Blobs) != 3 {
		t.Errorf("entry %d: kind %s, %d blobs; want %s and the three manifests", e.Seq, e.Kind, len(e.Blobs), records.KindWeights)
	}
	var body WeightsReport
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatal(err)
	}
	if !body.OK || len(body.Findings) != 2 || body.Trained.Identity != r.Trained.Identity {
		t.Errorf("recorded body %s", e.Body)
	}
	for _, cp := range []WeightsCheckpoint{body.Base, body.Trained, *body.NoUpdate} {
		b, err := l.ReadBlob(*cp.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		var m manifests.CheckpointManifest
		if err := json.Unmarshal(b, &m); err != nil || m.Identity != cp.Identity {
			t.Errorf("manifest blob of %s: identity %v, want %v (%v)", cp.Path, m.Identity, cp.Identity, err)
		}
	}
}
