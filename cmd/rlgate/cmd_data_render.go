package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/urfave/cli/v3"
)

func newDataRenderCommand() *cli.Command {
	return &cli.Command{
		Name:  "render",
		Usage: "render each task's prompt as the protocol shows it to a policy (the seeds' rl2sft step)",
		Description: "Fills the protocol's system and user templates from each task's schema\n" +
			"({db_details}), external knowledge ({external_knowledge}, the protocol's\n" +
			"no_knowledge when there is none) and question ({question}), with the renderer\n" +
			"rollout, synth and export rl use, so a prompt rendered here is byte for byte\n" +
			"the one an evaluation sends. --drop-examples leaves the protocol's example\n" +
			"block ({examples}, prompt.examples) out, as the seeds' rl2sft step does.\n" +
			"Writes one JSON line per task: {\"id\", \"db_id\", \"messages\": [{\"role\":\n" +
			"\"system\", \"content\"}, {\"role\": \"user\", \"content\"}]}, in task order, and\n" +
			"records the file as an artifact with its digest and the digests of the tasks\n" +
			"and the protocol.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "tasks", Required: true, Usage: "`DIR` written by rlgate data import (or a tasks.jsonl FILE)"},
			&cli.StringFlag{Name: "protocol", Usage: "protocol `FILE` (YAML or JSON) over the built-in one"},
			&cli.BoolFlag{Name: "drop-examples", Usage: "render {examples} empty"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "JSON lines `FILE` to write"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := runDataRender(ctx, dataRenderOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Tasks: cmd.String("tasks"),
				Protocol: cmd.String("protocol"), DropExamples: cmd.Bool("drop-examples"), Out: cmd.String("out")}, cmd.Root().Writer)
			return err
		},
	}
}

type dataRenderOptions struct {
	Dir, Tasks, Protocol, Out string
	JSON, DropExamples        bool
}

// renderedPrompt is one line of rlgate data render's output.
type renderedPrompt struct {
	ID       string            `json:"id"`
	DBID     string            `json:"db_id"`
	Messages []rollout.Message `json:"messages"`
}

// dataRenderSummary is what data render reports; it is also the manifest
// recorded with the file.
type dataRenderSummary struct {
	Out            string        `json:"out"`
	Digest         ledger.Digest `json:"digest"`
	Tasks          int           `json:"tasks"`
	TasksDigest    ledger.Digest `json:"tasks_digest"`
	ProtocolDigest ledger.Digest `json:"protocol_digest"`
	DropExamples   bool          `json:"drop_examples"`
	Seq            int64         `json:"seq"`
}

func runDataRender(ctx context.Context, o dataRenderOptions, w io.Writer) (*dataRenderSummary, error) {
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
	if errors.Is(err, dataset.ErrTaskSource) {
		return nil, usagef("%v", err)
	}
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	out := make([]renderedPrompt, len(src.Tasks))
	for i := range src.Tasks {
		t := &src.Tasks[i]
		out[i] = renderedPrompt{ID: t.ID, DBID: t.DBID, Messages: p.Messages(t)}
	}
	if err := jsonl.WriteFile(o.Out, func(w io.Writer) error { return jsonl.Write(w, out) }); err != nil {
		return nil, err
	}
	s := &dataRenderSummary{Out: o.Out, Tasks: len(out), TasksDigest: src.Digest, DropExamples: o.DropExamples}
	if s.ProtocolDigest, err = p.Digest(); err != nil {
		return nil, err
	}
	if s.Digest, _, err = manifests.HashFile(ctx, o.Out); err != nil {
		return nil, err
	}
	e, err := manifests.RecordFile(ctx, l, "render", s.Digest, s)
	if err != nil {
		return nil, err
	}
	s.Seq = e.Seq
	return s, emit(w, o.JSON, s, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "rendered %d prompts to %s %s (protocol %s); recorded as entry %d\n", s.Tasks, s.Out, s.Digest, s.ProtocolDigest, s.Seq)
		return err
	})
}
