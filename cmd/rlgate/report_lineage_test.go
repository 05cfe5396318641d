package main

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/manifests/manifeststest"
)

// reportCurriculum: RL in two stages, the second starting from the first's
// checkpoint, with the policy naming only the second as rl. The report
// shows the first as "stage rl1" in the lineage and the curves, and the
// second's input names the run that wrote it.
func reportCurriculum(t *testing.T, x *gateExperiment) {
	rl1 := manifeststest.Copy(t, sampleCkpt, filepath.Join(x.dir, "rl1-weights"), 1, manifeststest.Flip("e", 1, 0x20))
	gateTrain(t, x.ledger, x.dir, "train-rl1", "rl1", x.base, x.trainData["rl"], rl1, "1e-6", 0.2, "--param", "lr=1e-6")
	gateTrain(t, x.ledger, x.dir, "train-rl2", "rl2", filepath.Join(x.dir, "train-rl1-out"), x.trainData["rl"], x.written["rl"], "1e-6", 0.3, "--param", "lr=1e-6")
	train := gateSetLabel(x.train, "rl", "train-rl2")
	r := reportJSON(t, reportWrite(t, x.ledger, "--runs", x.runs, "--train", train))
	type row struct{ Label, Run, Role, Name, ProducedBy string }
	var got []row
	for _, l := range r.Lineage {
		if l.Kind == "train" && (l.Run == "train-rl1" || l.Run == "train-rl2") && l.Name != "data" {
			got = append(got, row{l.Label, l.Run, string(l.Role), l.Name, l.ProducedBy})
		}
	}
	want := []row{
		{"rl", "train-rl2", "input", "base", "train-rl1"},
		{"rl", "train-rl2", "output", "ckpt", ""},
		// The No-update control (lr = 0) wrote Base's bytes back: it is
		// not shown as Base's producer.
		{"stage rl1", "train-rl1", "input", "base", ""},
		{"stage rl1", "train-rl1", "output", "ckpt", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lineage of the two rl stages (-want +got):\n%s", diff)
	}
	curves := map[string]bool{}
	for _, c := range r.Curves {
		curves[c.Label+" "+c.Run+" "+c.Metric] = true
	}
	for _, want := range []string{"rl train-rl2 reward", "stage rl1 train-rl1 reward"} {
		if !curves[want] {
			t.Errorf("no curve %s among %v", want, curves)
		}
	}
}
