package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/synth"
)

// The SFT formats: LLaMA-Factory's two dataset formats.
const (
	FormatShareGPT = "sharegpt"
	FormatAlpaca   = "alpaca"
)

// SFTFormats lists the formats SFT exports to.
var SFTFormats = []string{FormatShareGPT, FormatAlpaca}

// DatasetInfoFile is LLaMA-Factory's dataset registry, written beside an
// SFT export.
const DatasetInfoFile = "dataset_info.json"

// The ShareGPT roles, LLaMA-Factory's default tags: a system message
// first, then human, and gpt answered by observation until the final gpt.
const (
	RoleSystem      = "system"
	RoleHuman       = "human"
	RoleGPT         = "gpt"
	RoleObservation = "observation"
)

// Message is one ShareGPT message.
type Message struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// ShareGPT is one record of a ShareGPT export.
type ShareGPT struct {
	Conversations []Message `json:"conversations"`
}

// Alpaca is one record of an alpaca export: the last prompt and reply,
// with the earlier (prompt, reply) pairs as history.
type Alpaca struct {
	Instruction string      `json:"instruction"`
	Input       string      `json:"input"`
	Output      string      `json:"output"`
	System      string      `json:"system"`
	History     [][2]string `json:"history"`
}

// Conversation is a trajectory as LLaMA-Factory's ShareGPT reads it: the
// system message, the first user message, then each reply (as
// synth.Turn.Reply writes it) followed by the observation it brought back.
func Conversation(t *synth.Trajectory) []Message {
	msgs := []Message{{RoleSystem, t.System}, {RoleHuman, t.BasePrompt}}
	for _, turn := range t.Turns {
		msgs = append(msgs, Message{RoleGPT, turn.Reply()})
		if !turn.IsFinal && turn.Observation != "" {
			msgs = append(msgs, Message{RoleObservation, turn.Observation})
		}
	}
	return msgs
}

// ToAlpaca is a conversation (Conversation) as an alpaca record.
func ToAlpaca(msgs []Message) Alpaca {
	a := Alpaca{System: msgs[0].Value, History: [][2]string{}}
	pairs := msgs[1:]
	for i := 0; i+1 < len(pairs); i += 2 {
		if i+2 >= len(pairs) {
			a.Instruction, a.Output = pairs[i].Value, pairs[i+1].Value
			break
		}
		a.History = append(a.History, [2]string{pairs[i].Value, pairs[i+1].Value})
	}
	return a
}

// CheckShareGPT checks a conversation as LLaMA-Factory's ShareGPT reader
// does: an optional system message first, then human or observation at
// even positions and gpt at odd ones, ending on gpt.
func CheckShareGPT(msgs []Message) error {
	if len(msgs) > 0 && msgs[0].From == RoleSystem {
		msgs = msgs[1:]
	}
	if len(msgs) == 0 || len(msgs)%2 != 0 {
		return fmt.Errorf("%d messages after the system message; want an even number, at least 2", len(msgs))
	}
	for i, m := range msgs {
		ok := m.From == RoleGPT
		if i%2 == 0 {
			ok = m.From == RoleHuman || (i > 0 && m.From == RoleObservation)
		}
		if !ok {
			return fmt.Errorf("message %d is from %q, out of turn", i, m.From)
		}
	}
	return nil
}

// SFTOptions describe an SFT export.
type SFTOptions struct {
	From   string // a directory rlgate synth wrote, or its trajectories.jsonl
	Format string // FormatShareGPT or FormatAlpaca
	Out    string // the dataset file; dataset_info.json goes beside it
	Run    string // the export run; empty: DefaultRun
}

// ExportSFT writes the trajectories of o.From as an LLaMA-Factory dataset
// (a JSON array, one record a line, in the trajectories' order), adds or
// replaces its entry in the dataset_info.json beside it, and records an
// export run with both files as outputs. The same export again writes the
// same bytes and finds its run recorded.
func ExportSFT(ctx context.Context, l *ledger.Ledger, o SFTOptions) (*Summary, error) {
	if !slices.Contains(SFTFormats, o.Format) {
		return nil, fmt.Errorf("export sft: %w: %q; want %s", ErrFormat, o.Format, strings.Join(SFTFormats, " or "))
	}
	from := o.From
	if fi, err := os.Stat(from); err == nil && fi.IsDir() {
		from = filepath.Join(from, synth.TrajectoriesFile)
	}
	trajs, err := jsonl.Read[synth.Trajectory](from, nil)
	if err != nil {
		return nil, fmt.Errorf("export sft: read %w", err)
	}
	var records []any
	ids := make([]string, 0, len(trajs))
	for i := range trajs {
		t := &trajs[i]
		msgs := Conversation(t)
		if err := CheckShareGPT(msgs); err != nil {
			return nil, fmt.Errorf("export sft: %s trajectory %d (%s#%d): %w", from, i+1, t.ExampleID, t.SampleID, err)
		}
		if o.Format == FormatAlpaca {
			records = append(records, ToAlpaca(msgs))
		} else {
			records = append(records, ShareGPT{Conversations: msgs})
		}
		ids = append(ids, t.ExampleID)
	}
	if err := writeOut(o.Out, func(w io.Writer) error { return writeArray(w, records) }); err != nil {
		return nil, err
	}
	info := filepath.Join(filepath.Dir(o.Out), DatasetInfoFile)
	if err := writeDatasetInfo(info, filepath.Base(o.Out), o.Format); err != nil {
		return nil, err
	}
	in, _, err := manifests.HashFile(ctx, from)
	if err != nil {
		return nil, err
	}
	start := Start{Kind: "sft", Format: o.Format, Inputs: map[string]ledger.Digest{"trajectories": in}, From: from, Rows: len(records)}
	if start.Tasks, start.TasksDigest, err = synthesisTasks(ctx, l, in); err != nil {
		return nil, err
	}
	return record(ctx, l, o.Run, start, ids, []output{{"data", o.Out}, {"dataset_info", info}})
}

// writeArray writes records as a JSON array, one record a line, without
// HTML escaping. Batches of records are encoded on every core and written
// in order.
func writeArray[T any](w io.Writer, records []T) error {
	const batch = 512
	bufs := make([]bytes.Buffer, (len(records)+batch-1)/batch)
	err := ledger.ForEach(context.Background(), len(bufs), func(_ context.Context, k int) error {
		buf := &bufs[k]
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		for i := k * batch; i < min((k+1)*batch, len(records)); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
			if err := enc.Encode(records[i]); err != nil {
				return err
			}
			buf.Truncate(buf.Len() - 1) // Encode's newline
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for k := range bufs {
		if _, err := w.Write(bufs[k].Bytes()); err != nil {
			return err
		}
		bufs[k] = bytes.Buffer{}
	}
	_, err = io.WriteString(w, "\n]\n")
	return err
}

// DatasetName is the name an export registers in dataset_info.json: the
// file's name without its extension.
func DatasetName(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file))
}

// datasetInfo is the dataset_info.json entry of an export, with
// LLaMA-Factory's column and tag names spelled out so that no default is
// relied on.
func datasetInfo(file, format string) map[string]any {
	if format == FormatAlpaca {
		return map[string]any{"file_name": file, "formatting": "alpaca",
			"columns": map[string]string{"prompt": "instruction", "query": "input", "response": "output", "system": "system", "history": "history"}}
	}
	return map[string]any{"file_name": file, "formatting": "sharegpt",
		"columns": map[string]string{"messages": "conversations"},
		"tags": map[string]string{"role_tag": "from", "content_tag": "value", "user_tag": RoleHuman, "assistant_tag": RoleGPT,
			"observation_tag": RoleObservation, "system_tag": RoleSystem}}
}

// writeDatasetInfo sets the export's entry in a dataset_info.json, keeping
// the other entries of an existing one.
func writeDatasetInfo(path, file, format string) error {
	entries := map[string]any{}
	if raw, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(raw, &entries); err != nil {
			return fmt.Errorf("export sft: %s is not a JSON object: %w. Try: another --out directory, or remove it", path, err)
		}
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("export sft: %w", err)
	}
	entries[DatasetName(file)] = datasetInfo(file, format)
	return jsonl.WriteFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(entries) // maps encode with sorted keys: the same entries give the same bytes
	})
}

// synthesisTasks names the tasks file of the synthesis that recorded
// trajectories with digest d as its output; nothing when the ledger holds
// none (trajectories made elsewhere).
func synthesisTasks(ctx context.Context, l *ledger.Ledger, d ledger.Digest) (string, ledger.Digest, error) {
	rows, err := l.ArtifactsByDigest(ctx, d)
	if err != nil {
		return "", ledger.Digest{}, err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Role != records.RoleOutput {
			continue
		}
		r, err := l.RunStatus(ctx, rows[i].Run)
		if err != nil {
			return "", ledger.Digest{}, err
		}
		e, err := l.EntryBySeq(ctx, r.StartedSeq)
		if err != nil {
			return "", ledger.Digest{}, err
		}
		var s synth.Start
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return "", ledger.Digest{}, fmt.Errorf("export sft: start of %s: %w", r.Run, err)
		}
		if s.Stage == synth.Stage {
			return s.Tasks, s.TasksDigest, nil
		}
	}
	return "", ledger.Digest{}, nil
}
