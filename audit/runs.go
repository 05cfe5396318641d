package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	grading "github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
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
		for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindArtifact, Run: lr.Run}) {
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
func (t *trainRun) checkpoint(role records.Role, name string) *trainArtifact {
	var first *trainArtifact
	for i := range t.artifacts {
		a := &t.artifacts[i]
		if a.Role != role || a.Kind != records.ArtifactCheckpoint {
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
		if a.Role != records.RoleInput || a.Kind == records.ArtifactCheckpoint || a.Manifest == nil {
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

// Resolution is a run a policy or a flag named by its stage, and the run
// the name was taken to be: the stage's latest run that ended ok, as the
// ledger held it when the name was resolved. A gate records its
// resolutions in the verdict (Verdict.Resolved), and re-derivation checks
// each again on the entries the verdict read, so a later run of the stage
// cannot change what an existing verdict stands for.
type Resolution struct {
	Label string `json:"label"`
	Train bool   `json:"train,omitempty"` // under train: (--train), else runs: (--runs)
	Stage string `json:"stage"`
	Run   string `json:"run"`
}

// String says it in a line: "train rl: stage rl2 is run rl2-2026... (its
// latest that ended ok)".
func (r Resolution) String() string {
	return fmt.Sprintf("%s %s: stage %s is run %s (its latest that ended ok)", map[bool]string{true: "train", false: "runs"}[r.Train], r.Label, r.Stage, r.Run)
}

// ResolveStages returns s with every run that is not a run id of l but
// the name of a stage replaced by that stage's latest run that ended ok,
// and says which it replaced. A run id wins over a stage of the same name.
// A name that is neither, a stage with no run that ended ok, and a stage
// whose ok runs were recorded in more than one working directory (two
// pipelines, or two clones of one, that share the ledger: its latest run
// may not be the one meant) are errors naming it.
func ResolveStages(ctx context.Context, l *ledger.Ledger, s Subjects) (Subjects, []Resolution, error) {
	runs, err := l.Runs(ctx)
	if err != nil {
		return Subjects{}, nil, err
	}
	ids := make(map[string]bool, len(runs))
	for _, r := range runs {
		ids[r.Run] = true
	}
	var res []Resolution
	resolve := func(lrs []LabeledRun, train bool) ([]LabeledRun, error) {
		out := slices.Clone(lrs)
		for i, lr := range out {
			if ids[lr.Run] {
				continue
			}
			where := fmt.Sprintf("%s %s", map[bool]string{true: "train", false: "runs"}[train], lr.Label)
			run, err := stageRun(ctx, l, runs, lr.Run)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out[i].Run = run
			res = append(res, Resolution{Label: lr.Label, Train: train, Stage: lr.Run, Run: run})
		}
		return out, nil
	}
	var out Subjects
	if out.Runs, err = resolve(s.Runs, false); err != nil {
		return Subjects{}, nil, err
	}
	if out.Train, err = resolve(s.Train, true); err != nil {
		return Subjects{}, nil, err
	}
	return out, res, nil
}

// StageRun returns the run a --run flag names: the run of that id, else
// the latest run that ended ok of the stage of that name (ResolveStages).
// A name that is neither is an error wrapping ledger.ErrNotFound.
func StageRun(ctx context.Context, l *ledger.Ledger, name string) (string, error) {
	runs, err := l.Runs(ctx)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(runs, func(r ledger.Run) bool { return r.Run == name }) {
		return name, nil
	}
	return stageRun(ctx, l, runs, name)
}

// stageRun is the latest run of stage that ended ok, of runs (in start
// order).
func stageRun(ctx context.Context, l *ledger.Ledger, runs []ledger.Run, stage string) (string, error) {
	latest, dirs, other := "", []string{}, ""
	for _, r := range runs {
		if r.Stage != stage {
			continue
		}
		if r.Status != records.StatusOK {
			other = r.Run + " " + string(r.Status)
			continue
		}
		var start struct {
			Dir string `json:"dir"`
		}
		if err := l.DecodeBody(ctx, r.StartedSeq, &start); err != nil {
			return "", fmt.Errorf("run %s: %w", r.Run, err)
		}
		if !slices.Contains(dirs, start.Dir) {
			dirs = append(dirs, start.Dir)
		}
		latest = r.Run
	}
	switch {
	case latest == "" && other == "":
		return "", unknownName{fmt.Sprintf("%q is neither a run nor a stage of this ledger. Try: rlgate runs, which lists every run with its stage", ledger.Printable(stage))}
	case latest == "":
		return "", fmt.Errorf("stage %q has no run that ended ok (latest: %s). Try: run the stage again, or name a run id (rlgate runs)", ledger.Printable(stage), other)
	case len(dirs) > 1:
		shown := dirs[:min(len(dirs), 3)]
		return "", fmt.Errorf("stage %q is ambiguous: its runs that ended ok were started in %d directories (%s), so its latest, %s, may not be the one meant. Try: name the run id (rlgate runs)",
			ledger.Printable(stage), len(dirs), ledger.Printable(strings.Join(shown, ", ")), latest)
	}
	return latest, nil
}

// unknownName is a name that is neither a run nor a stage; it is a
// ledger.ErrNotFound.
type unknownName struct{ msg string }

func (e unknownName) Error() string { return e.msg }
func (e unknownName) Unwrap() error { return ledger.ErrNotFound }
