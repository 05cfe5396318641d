package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/stages/tasks"
)

// evalRun is a labelled grading run with the rollout it graded.
type evalRun struct {
	LabeledRun
	grade      grading.TrajectoryStart
	gradeRun   ledger.Run
	rollout    *rollout.Start
	rolloutRun ledger.Run
}

// loadEvals reads every labelled grading run and its rollout.
func loadEvals(ctx context.Context, l *ledger.Ledger, runs []LabeledRun) ([]*evalRun, error) {
	out := make([]*evalRun, 0, len(runs))
	for _, lr := range runs {
		e := &evalRun{LabeledRun: lr}
		var err error
		if e.gradeRun, err = l.RunStatus(ctx, lr.Run); err != nil {
			return nil, fmt.Errorf("evaluation %s=%s: %w. Try: rlgate log --kind run.start to list runs", lr.Label, lr.Run, err)
		}
		if err := l.DecodeBody(ctx, e.gradeRun.StartedSeq, &e.grade); err != nil {
			return nil, fmt.Errorf("evaluation %s=%s: %w", lr.Label, lr.Run, err)
		}
		if e.grade.Rollout == "" {
			return nil, fmt.Errorf("evaluation %s=%s: the run is a %q run, not a grading of a rollout. Try: name the run rlgate eval or grade recorded (<rollout>.<metric>-<mode>)",
				lr.Label, lr.Run, e.grade.Stage)
		}
		if e.rollout, err = rollout.ReadStart(ctx, l, e.grade.Rollout); err != nil {
			return nil, fmt.Errorf("evaluation %s=%s: %w", lr.Label, lr.Run, err)
		}
		if e.rolloutRun, err = l.RunStatus(ctx, e.grade.Rollout); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// datasetDir is the imported dataset directory the rollout read its tasks
// from, as recorded (relative paths are taken from the working directory).
func (e *evalRun) datasetDir() string { return filepath.Dir(e.rollout.Tasks) }

// trainArtifact is an artifact entry of a stage run, by field name.
type trainArtifact struct {
	Seq int64 `json:"-"`
	ledger.Artifact
	Path string `json:"path"`
	// ProducedBy is the run that had recorded the same digest as its
	// output when this input was recorded (a synthesis, an export).
	ProducedBy *runner.Lineage `json:"produced_by,omitempty"`
}

// trainRun is a labelled stage run (rlgate run) with its artifacts.
type trainRun struct {
	LabeledRun
	run       ledger.Run
	start     runner.StartBody
	artifacts []trainArtifact
}

// loadSubjects reads the labelled evaluations and training runs of s.
func loadSubjects(ctx context.Context, l *ledger.Ledger, s Subjects) ([]*evalRun, []*trainRun, error) {
	evals, err := loadEvals(ctx, l, s.Runs)
	if err != nil {
		return nil, nil, err
	}
	trains, err := loadTrains(ctx, l, s.Train)
	return evals, trains, err
}

// loadTrains reads every labelled stage run and its artifact entries.
func loadTrains(ctx context.Context, l *ledger.Ledger, runs []LabeledRun) ([]*trainRun, error) {
	out := make([]*trainRun, 0, len(runs))
	for _, lr := range runs {
		t := &trainRun{LabeledRun: lr}
		var err error
		if t.run, err = l.RunStatus(ctx, lr.Run); err != nil {
			return nil, fmt.Errorf("training %s=%s: %w. Try: rlgate log --kind run.start to list runs", lr.Label, lr.Run, err)
		}
		if err := l.DecodeBody(ctx, t.run.StartedSeq, &t.start); err != nil {
			return nil, fmt.Errorf("training %s=%s: %w", lr.Label, lr.Run, err)
		}
		for e, err := range l.Entries(ctx, ledger.Filter{Kind: ledger.KindArtifact, Run: lr.Run}) {
			if err != nil {
				return nil, err
			}
			a := trainArtifact{Seq: e.Seq}
			if err := json.Unmarshal(e.Body, &a); err != nil {
				return nil, fmt.Errorf("training %s=%s: entry %d: %w", lr.Label, lr.Run, e.Seq, err)
			}
			t.artifacts = append(t.artifacts, a)
		}
		out = append(out, t)
	}
	return out, nil
}

// checkpoint returns the run's checkpoint artifact of role (input or
// output): the one named name when there is one, else the first; nil when
// the run recorded none.
func (t *trainRun) checkpoint(role, name string) *trainArtifact {
	var first *trainArtifact
	for i := range t.artifacts {
		a := &t.artifacts[i]
		if a.Role != role || a.Kind != "checkpoint" {
			continue
		}
		if a.Name == name {
			return a
		}
		if first == nil {
			first = a
		}
	}
	return first
}

// datasetInput returns the run's first input that is an imported dataset
// directory (it held the import's manifest.json when it was recorded),
// with that manifest, read by digest wherever the directory lies now
// (dataset.InputManifest).
func (t *trainRun) datasetInput(ctx context.Context, l *ledger.Ledger) (*trainArtifact, *dataset.Manifest, error) {
	for i := range t.artifacts {
		a := &t.artifacts[i]
		if a.Role != "input" || a.Kind == "checkpoint" || a.Manifest == nil {
			continue
		}
		m, err := dataset.InputManifest(ctx, l, a.Path, *a.Manifest)
		if err != nil {
			return a, nil, fmt.Errorf("input %s: %w", a.Name, err)
		}
		if m != nil {
			return a, m, nil
		}
	}
	return nil, nil, nil
}

// readTasks reads the tasks file the ledger recorded at path with digest
// want, wherever it lies now (dataset.ReadRecorded).
func readTasks(ctx context.Context, l *ledger.Ledger, path string, want ledger.Digest) ([]tasks.Task, error) {
	raw, err := dataset.ReadRecorded(ctx, l, path, want)
	if err != nil {
		return nil, err
	}
	return tasks.Parse(path, raw)
}

// readGold reads the gold file the ledger recorded at path with digest
// want, wherever it lies now (dataset.ReadRecorded).
func readGold(ctx context.Context, l *ledger.Ledger, path string, want ledger.Digest) ([]gold.Gold, error) {
	raw, err := dataset.ReadRecorded(ctx, l, path, want)
	if err != nil {
		return nil, err
	}
	return gold.Parse(path, raw)
}

// trainByLabel returns the training run labelled label, or nil.
func trainByLabel(ts []*trainRun, label string) *trainRun {
	for _, t := range ts {
		if t.Label == label {
			return t
		}
	}
	return nil
}

// readManifest reads a checkpoint manifest blob.
func readManifest(l *ledger.Ledger, d ledger.Digest) (*manifests.CheckpointManifest, error) {
	raw, err := l.ReadBlob(d)
	if err != nil {
		return nil, err
	}
	var m manifests.CheckpointManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("checkpoint manifest %s: %w", d, err)
	}
	return &m, nil
}
