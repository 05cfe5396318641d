package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/synth"
	"github.com/rlgate/rlgate/stages/tasks"
)

// The RL formats.
const (
	FormatSkyRLParquet = "skyrl-parquet" // SkyRL's text2sql dataset (skyrl-gym's SQLEnv reads it)
	FormatVerlParquet  = "verl-parquet"  // veRL's RLHF dataset columns
	FormatJSONL        = "jsonl"         // the SkyRL row as JSON lines
)

// RLFormats lists the formats RL data exports to.
var RLFormats = []string{FormatSkyRLParquet, FormatVerlParquet, FormatJSONL}

// Chat is one prompt message, as both trainers read a prompt: a list of
// {role, content}.
type Chat struct {
	Role    string `json:"role" parquet:"role"`
	Content string `json:"content" parquet:"content"`
}

// RewardSpec is SkyRL's reward column: rule-based, against the gold SQL.
type RewardSpec struct {
	Method      string `json:"method" parquet:"method"`
	GroundTruth string `json:"ground_truth" parquet:"ground_truth"`
}

// SkyRLRow is one row of SkyRL's text2sql data. Data names the database
// collection skyrl-gym's SQLEnv looks in (spider or bird: its db_path
// holds spider/database and bird/train/train_databases).
type SkyRLRow struct {
	DataSource string     `json:"data_source" parquet:"data_source"`
	Prompt     []Chat     `json:"prompt" parquet:"prompt,list"`
	EnvClass   string     `json:"env_class" parquet:"env_class"`
	RewardSpec RewardSpec `json:"reward_spec" parquet:"reward_spec"`
	DBID       string     `json:"db_id" parquet:"db_id"`
	Data       string     `json:"data" parquet:"data"`
}

// RewardModel is veRL's reward column.
type RewardModel struct {
	Style       string `parquet:"style"`
	GroundTruth string `parquet:"ground_truth"`
}

// ExtraInfo is veRL's free column; it carries what a text2sql reward
// function needs besides the gold: the database and the example.
type ExtraInfo struct {
	Split     string `parquet:"split"`
	Index     int64  `parquet:"index"`
	ExampleID string `parquet:"example_id"`
	DBID      string `parquet:"db_id"`
	Data      string `parquet:"data"`
}

// VerlRow is one row of veRL's RLHF dataset (data_source, prompt,
// ability, reward_model, extra_info).
type VerlRow struct {
	DataSource  string      `parquet:"data_source"`
	Prompt      []Chat      `parquet:"prompt,list"`
	Ability     string      `parquet:"ability"`
	RewardModel RewardModel `parquet:"reward_model"`
	ExtraInfo   ExtraInfo   `parquet:"extra_info"`
}

// RLOptions describe an RL export.
type RLOptions struct {
	Tasks    string // a directory rlgate data import wrote
	Exclude  string // an example_ids.json (a JSON array of task ids), or the synth directory holding one, to keep out; empty: none
	Format   string
	Out      string
	Protocol rollout.Protocol // renders the prompts, as rollout and synth do
	Run      string           // the export run; empty: as record names it
}

// ExportRL writes the tasks of an imported dataset, less those o.Exclude
// lists, as RL training data with the gold as ground truth, the prompts
// rendered by the protocol (the system and first user message a rollout
// sends), and records an export run with the exclusion and the digests of
// tasks, gold, exclusion and output.
func ExportRL(ctx context.Context, l *ledger.Ledger, o RLOptions) (*Summary, error) {
	if !slices.Contains(RLFormats, o.Format) {
		return nil, fmt.Errorf("export rl: %w: %q; want %s", ErrFormat, o.Format, strings.Join(RLFormats, ", "))
	}
	man, err := dataset.ReadManifest(o.Tasks)
	if err != nil {
		return nil, err
	}
	start := Start{Kind: "rl", Format: o.Format, From: o.Tasks, Tasks: filepath.Join(o.Tasks, dataset.TasksFile), TasksDigest: man.Tasks.Digest,
		Inputs: map[string]ledger.Digest{"tasks": man.Tasks.Digest, "gold": man.Gold.Digest}}
	ts, err := tasks.Read(start.Tasks)
	if err != nil {
		return nil, err
	}
	golds, err := gold.Read(filepath.Join(o.Tasks, dataset.GoldFile))
	if err != nil {
		return nil, err
	}
	goldByID := make(map[string]*gold.Gold, len(golds))
	for i := range golds {
		goldByID[golds[i].ID] = &golds[i]
	}
	pd, err := o.Protocol.Digest()
	if err != nil {
		return nil, err
	}
	start.Protocol = &pd
	excluded := map[string]bool{}
	if o.Exclude != "" {
		if fi, err := os.Stat(o.Exclude); err == nil && fi.IsDir() {
			o.Exclude = filepath.Join(o.Exclude, synth.ExampleIDsFile) // the directory rlgate synth wrote
		}
		ids, d, err := ReadExampleIDs(ctx, o.Exclude)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			excluded[id] = true
		}
		start.Inputs["exclude"] = d
		start.Exclusion = &Exclusion{Path: o.Exclude, Digest: d, IDs: len(excluded)}
	}
	var skyrl []SkyRLRow
	var verl []VerlRow
	var ids []string
	for i := range ts {
		t := &ts[i]
		if excluded[t.ID] {
			start.Exclusion.Excluded++
			continue
		}
		g := goldByID[t.ID]
		if g == nil {
			return nil, fmt.Errorf("export rl: task %s has no gold in %s", t.ID, o.Tasks)
		}
		prompt := []Chat{{"system", o.Protocol.SystemPrompt(t)}, {"user", o.Protocol.UserPrompt(t)}}
		ids = append(ids, t.ID)
		if o.Format == FormatVerlParquet {
			verl = append(verl, VerlRow{DataSource: man.Dataset, Prompt: prompt, Ability: "text2sql",
				RewardModel: RewardModel{Style: "rule", GroundTruth: g.SQL},
				ExtraInfo:   ExtraInfo{Split: "train", Index: int64(t.Index), ExampleID: t.ID, DBID: t.DBID, Data: man.Kind}})
			continue
		}
		skyrl = append(skyrl, SkyRLRow{DataSource: man.Dataset, Prompt: prompt, EnvClass: "text2sql",
			RewardSpec: RewardSpec{Method: "rule", GroundTruth: g.SQL}, DBID: t.DBID, Data: man.Kind})
	}
	start.Rows = len(ids)
	var write func(io.Writer) error
	switch o.Format {
	case FormatSkyRLParquet:
		write = func(w io.Writer) error { return writeParquet(w, skyrl) }
	case FormatVerlParquet:
		write = func(w io.Writer) error { return writeParquet(w, verl) }
	case FormatJSONL:
		write = func(w io.Writer) error { return jsonl.Write(w, skyrl) }
	}
	if err := writeOut(o.Out, write); err != nil {
		return nil, err
	}
	return record(ctx, l, o.Run, start, ids, []output{{"data", o.Out}})
}

// writeParquet writes rows as one parquet file, uncompressed (the bytes
// then depend on nothing but the rows and the library version).
func writeParquet[T any](w io.Writer, rows []T) error {
	pw := parquet.NewGenericWriter[T](w, parquet.Compression(&parquet.Uncompressed))
	if _, err := pw.Write(rows); err != nil {
		return err
	}
	return pw.Close()
}

// ReadExampleIDs reads an example_ids.json (a JSON array of task ids, as
// rlgate synth writes it) and its digest.
func ReadExampleIDs(ctx context.Context, path string) ([]string, ledger.Digest, error) {
	raw, err := untrusted.ReadFile(path, untrusted.ExampleIDsLimit)
	if err != nil {
		return nil, ledger.Digest{}, fmt.Errorf("read example ids: %w", err)
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, ledger.Digest{}, fmt.Errorf("read example ids %s: want a JSON array of task ids (as rlgate synth writes example_ids.json): %w", path, err)
	}
	d, _, err := manifests.HashFile(ctx, path)
	return ids, d, err
}
