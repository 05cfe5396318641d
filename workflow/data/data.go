// Package data is rlgate data: a benchmark imported into public tasks and
// gold (stages/dataset) and recorded as a dataset artifact, and the
// prompts of an import rendered as the rollout protocol shows them to a
// policy and recorded as a file artifact; and rlgate export: synthesised
// trajectories or an import's tasks written for an outside trainer
// (stages/export), each export a run.
package data

import (
	"context"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
)

// ImportOptions name a benchmark's files: Kind is spider, bird, skyrl or
// a Spider variant (dataset.SpiderVariants), and only the files that kind
// reads are looked at.
type ImportOptions struct {
	Kind, Out, Name, DBRoot, Dev, Gold, Tables, Parquet string
	Force                                               bool // replace an earlier import in Out
}

// Imported is an import written to Out and recorded in entry Seq.
type Imported struct {
	dataset.Manifest
	Out string `json:"out"`
	Seq int64  `json:"seq"` // the dataset entry
}

// Import imports the benchmark o names into o.Out and records it in the
// ledger in dir as a dataset artifact (dataset.Manifest.Record). An Out
// that already holds anything is refused unless o.Force.
func Import(ctx context.Context, dir string, o ImportOptions) (*Imported, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if err := dataset.CheckOut(o.Out, o.Force); err != nil {
		return nil, err
	}
	var im *dataset.Imported
	switch o.Kind {
	case "spider":
		im, err = dataset.ImportSpider(ctx, dataset.SpiderOptions{Name: o.Name, Dev: o.Dev, Gold: o.Gold, Tables: o.Tables, DBRoot: o.DBRoot})
	case "bird":
		im, err = dataset.ImportBird(ctx, dataset.BirdOptions{Name: o.Name, Dev: o.Dev, DBRoot: o.DBRoot})
	case "skyrl":
		im, err = dataset.ImportSkyRL(ctx, dataset.SkyRLOptions{Name: o.Name, Parquet: o.Parquet, DBRoot: o.DBRoot})
	default:
		im, err = dataset.ImportSpiderVariant(ctx, dataset.VariantOptions{Variant: dataset.SpiderVariant(o.Kind), Name: o.Name, Dev: o.Dev, Tables: o.Tables, DBRoot: o.DBRoot})
	}
	if err != nil {
		return nil, err
	}
	if err := im.WriteDir(o.Out, o.Force); err != nil {
		return nil, err
	}
	e, err := im.Manifest.Record(ctx, l, o.Out)
	if err != nil {
		return nil, err
	}
	return &Imported{Manifest: im.Manifest, Out: o.Out, Seq: e.Seq}, nil
}

// RenderOptions say which tasks to render, under which protocol, to
// which file.
type RenderOptions struct {
	Tasks        string // an import directory or a tasks.jsonl file
	Protocol     string // "": the built-in protocol
	DropExamples bool   // render the protocol's {examples} empty
	Out          string
}

// Prompt is one line of a rendered file.
type Prompt struct {
	ID       string            `json:"id"`
	DBID     string            `json:"db_id"`
	Messages []rollout.Message `json:"messages"`
}

// Rendered is what a render wrote; it is also the manifest recorded with
// the file.
type Rendered struct {
	Out            string        `json:"out"`
	Digest         ledger.Digest `json:"digest"`
	Tasks          int           `json:"tasks"`
	TasksDigest    ledger.Digest `json:"tasks_digest"`
	ProtocolDigest ledger.Digest `json:"protocol_digest"`
	DropExamples   bool          `json:"drop_examples"`
	Seq            int64         `json:"seq"`
}

// Render writes one JSON line per task of o.Tasks, in task order: its id,
// database and the messages the protocol sends a policy for it, rendered
// by the renderer rollout, synth and export use. It records the file in
// the ledger in dir with its digest and those of the tasks and the
// protocol. Tasks that are no import nor tasks file are
// dataset.ErrTaskSource.
func Render(ctx context.Context, dir string, o RenderOptions) (*Rendered, error) {
	p := rollout.DefaultProtocol()
	if o.Protocol != "" {
		var err error
		if p, err = rollout.LoadProtocol(o.Protocol); err != nil {
			return nil, err
		}
	}
	if o.DropExamples {
		p = p.WithoutExamples()
	}
	// The database root is not needed to render; "-" stands in for it.
	src, err := dataset.LoadTasks(o.Tasks, "-", 0)
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	out := make([]Prompt, len(src.Tasks))
	for i := range src.Tasks {
		t := &src.Tasks[i]
		out[i] = Prompt{ID: t.ID, DBID: t.DBID, Messages: p.Messages(t)}
	}
	if err := jsonl.WriteFile(o.Out, func(w io.Writer) error { return jsonl.Write(w, out) }); err != nil {
		return nil, err
	}
	r := &Rendered{Out: o.Out, Tasks: len(out), TasksDigest: src.Digest, DropExamples: o.DropExamples}
	if r.ProtocolDigest, err = p.Digest(); err != nil {
		return nil, err
	}
	if r.Digest, _, err = manifests.HashFile(ctx, o.Out); err != nil {
		return nil, err
	}
	e, err := manifests.RecordFile(ctx, l, "render", r.Digest, r)
	if err != nil {
		return nil, err
	}
	r.Seq = e.Seq
	return r, nil
}

// ExportSFT writes synthesised trajectories as an SFT dataset and records
// the export in the ledger in dir (export.ExportSFT).
func ExportSFT(ctx context.Context, dir string, o export.SFTOptions) (*export.Summary, error) {
	return exportIn(ctx, dir, func(l *ledger.Ledger) (*export.Summary, error) { return export.ExportSFT(ctx, l, o) })
}

// ExportRL writes an import's tasks as RL training data and records the
// export in the ledger in dir (export.ExportRL).
func ExportRL(ctx context.Context, dir string, o export.RLOptions) (*export.Summary, error) {
	return exportIn(ctx, dir, func(l *ledger.Ledger) (*export.Summary, error) { return export.ExportRL(ctx, l, o) })
}

// exportIn runs one export with the ledger in dir open.
func exportIn(ctx context.Context, dir string, do func(*ledger.Ledger) (*export.Summary, error)) (*export.Summary, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return do(l)
}
