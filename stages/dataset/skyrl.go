package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// SkyRLOptions locate a SkyRL-style parquet file (columns prompt: list of
// {role, content}, db_id, data, reward_spec: {ground_truth, ...}) and the
// databases.
type SkyRLOptions struct {
	Name    string // default "skyrl"
	Parquet string
	DBRoot  string
}

// ImportSkyRL reads a SkyRL text2sql parquet file. Rows are read as
// generic maps, so optional or extra columns (as pandas writes them) do not
// matter; the question is the last user message of the prompt, and the
// gold is reward_spec.ground_truth.
func ImportSkyRL(ctx context.Context, o SkyRLOptions) (*Imported, error) {
	if o.Name == "" {
		o.Name = "skyrl"
	}
	f, err := os.Open(o.Parquet)
	if err != nil {
		return nil, fmt.Errorf("import skyrl: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("import skyrl: %w", err)
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("import skyrl %s: %w", o.Parquet, err)
	}
	// A map row type has no schema of its own: read with the file's. The
	// maps are made here because parquet-go v0.32 writes into the given
	// map and panics on a nil one.
	reader := parquet.NewGenericReader[map[string]any](pf, pf.Schema())
	defer reader.Close()
	recs := make([]map[string]any, pf.NumRows())
	for i := range recs {
		recs[i] = map[string]any{}
	}
	for got := 0; got < len(recs); {
		n, err := reader.Read(recs[got:])
		got += n
		if err != nil && (!errors.Is(err, io.EOF) || got < len(recs)) {
			return nil, fmt.Errorf("import skyrl %s: read %d of %d rows: %w", o.Parquet, got, len(recs), err)
		}
	}
	rows := make([]row, len(recs))
	for i, r := range recs {
		where := fmt.Sprintf("import skyrl %s row %d", o.Parquet, i)
		dbID, ok := r["db_id"].(string)
		if !ok || dbID == "" {
			return nil, fmt.Errorf("%s: no db_id string", where)
		}
		spec, _ := r["reward_spec"].(map[string]any)
		truth, ok := spec["ground_truth"].(string)
		if !ok || truth == "" {
			return nil, fmt.Errorf("%s: no reward_spec.ground_truth string", where)
		}
		question, err := lastUserMessage(r["prompt"])
		if err != nil {
			return nil, fmt.Errorf("%s: prompt: %w", where, err)
		}
		rows[i] = row{dbID: dbID, question: question, sql: truth}
	}
	return build(ctx, o.Name, "skyrl", o.DBRoot, rows, map[string]string{"parquet": o.Parquet})
}

// lastUserMessage finds the content of the last {role: user} message of a
// prompt list, however the list was nested by the writer.
func lastUserMessage(v any) (string, error) {
	list, ok := v.([]any)
	if !ok {
		return "", fmt.Errorf("want a list of messages, got %T", v)
	}
	question := ""
	for _, m := range list {
		msg, ok := m.(map[string]any)
		if !ok {
			continue
		}
		if inner, ok := msg["element"].(map[string]any); ok { // 3-level LIST encoding
			msg = inner
		}
		if msg["role"] == "user" {
			question, _ = msg["content"].(string)
		}
	}
	if question == "" {
		return "", fmt.Errorf("no user message")
	}
	return question, nil
}
