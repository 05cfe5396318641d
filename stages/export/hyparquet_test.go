//go:build hyparquet

package export_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/rollout"
)

// TestParquetReadByHyparquet has an independent reader, the npm package
// hyparquet (pinned in testdata/hyparquet, installed with npm ci into a
// temporary directory), read back both parquet formats export rl writes,
// so a file only parquet-go accepts cannot pass. Every row must be the
// task it came from: the columns SkyRL and veRL expect, the prompt as the
// protocol renders it, the gold as ground truth, the excluded ids absent.
// It needs node and npm with the npm registry reachable; CI runs it
// (.ci/run).
func TestParquetReadByHyparquet(t *testing.T) {
	ctx := context.Background()
	sp := "../../testdata/spider"
	im, err := dataset.ImportSpider(ctx, dataset.SpiderOptions{Dev: sp + "/dev.json", Gold: sp + "/dev_gold.sql", Tables: sp + "/tables.json", DBRoot: sp + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "spider")
	if err := im.WriteDir(data, false); err != nil {
		t.Fatal(err)
	}
	excluded := map[string]bool{}
	var ids []string
	for _, tk := range im.Tasks[:100] {
		excluded[tk.ID] = true
		ids = append(ids, tk.ID)
	}
	exclude := filepath.Join(dir, "example_ids.json")
	raw, _ := json.Marshal(ids)
	if err := os.WriteFile(exclude, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	node := filepath.Join(dir, "node")
	if err := os.CopyFS(node, os.DirFS("testdata/hyparquet")); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	install.Dir = node
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (needs node, npm and the npm registry): %v\n%s", err, out)
	}

	p := rollout.DefaultProtocol()
	l := ledgertest.New(t)
	for _, format := range []string{export.FormatSkyRLParquet, export.FormatVerlParquet} {
		out := filepath.Join(dir, format+".parquet")
		if _, err := export.ExportRL(ctx, l, export.RLOptions{Tasks: data, Exclude: exclude, Format: format, Out: out, Protocol: p}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("node", "read.mjs", out)
		cmd.Dir = node
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("hyparquet reading %s: %v\n%s", format, err, stderr.String())
		}
		var got []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(stdout))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var row map[string]any
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatal(err)
			}
			got = append(got, row)
		}
		var want []map[string]any
		for i := range im.Tasks {
			tk, g := &im.Tasks[i], im.Gold[i]
			if excluded[tk.ID] {
				continue
			}
			prompt := []any{map[string]any{"role": "system", "content": p.SystemPrompt(tk)}, map[string]any{"role": "user", "content": p.UserPrompt(tk)}}
			if format == export.FormatSkyRLParquet {
				want = append(want, map[string]any{"data_source": "spider", "prompt": prompt, "env_class": "text2sql",
					"reward_spec": map[string]any{"method": "rule", "ground_truth": g.SQL}, "db_id": tk.DBID, "data": "spider"})
				continue
			}
			want = append(want, map[string]any{"data_source": "spider", "prompt": prompt, "ability": "text2sql",
				"reward_model": map[string]any{"style": "rule", "ground_truth": g.SQL},
				"extra_info":   map[string]any{"split": "train", "index": float64(tk.Index), "example_id": tk.ID, "db_id": tk.DBID, "data": "spider"}})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s as hyparquet reads it (-want +got):\n%s", format, diff)
		}
	}
}
