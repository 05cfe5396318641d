package runner

import (
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
)

// TestImportRedactsTrackerConfig imports the real SwanLab run, whose
// LLaMA-Factory config holds swanlab_api_key (a placeholder there, a key in
// a user's run): the recorded config artifact holds it redacted under its
// dotted path, run.start names the field (with hub_token and its kin) but
// not bos_token_id, a number and a setting, and the summary and console
// output are recorded by digest beside it.
func TestImportRedactsTrackerConfig(t *testing.T) {
	l, err := ledger.Init(ctx, filepath.Join(t.TempDir(), "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	src := "../../testdata/trackers/swanlab/adsft-llamafactory-0.6.8/swanlog/run-20260531_190548-kd4v3b6ndym9m725v4d7q"
	res, err := Import(ctx, l, ImportSpec{Stage: "sft", Run: "sw", Source: MetricFile{Path: src, Format: metrics.FormatSwanLab}})
	if err != nil || res.Status != "ok" {
		t.Fatalf("import: %v, %+v", err, res)
	}
	var start ImportStartBody
	if err := l.DecodeBody(ctx, res.StartSeq, &start); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(start.Redacted, func(f string) bool { return strings.HasSuffix(f, ".swanlab_api_key") })
	if i < 0 || slices.Contains(start.Redacted, "config.bos_token_id") || start.Imported.Status != "SUCCESS" || start.Imported.ID != "kd4v3b6ndym9m725v4d7q" {
		t.Fatalf("run.start: redacted %q, imported %+v", start.Redacted, start.Imported)
	}
	names := map[string]ledger.Digest{}
	for seq := res.StartSeq + 1; seq < res.EndSeq; seq++ {
		var a ArtifactBody
		if e, err := l.EntryBySeq(ctx, seq); err != nil {
			t.Fatal(err)
		} else if e.Kind != records.KindArtifact {
			continue
		}
		if err := l.DecodeBody(ctx, seq, &a); err != nil {
			t.Fatal(err)
		}
		names[a.Name] = a.Digest
	}
	if len(names) != 3 || names["tracker-summary.json"].IsZero() || names["tracker-console.log"].IsZero() {
		t.Fatalf("artifacts %v, want config, summary and console output", names)
	}
	b, err := l.ReadBlob(names["tracker-config.json"])
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	v := any(cfg)
	for _, k := range strings.Split(strings.TrimPrefix(start.Redacted[i], "config."), ".") {
		v = v.(map[string]any)[k]
	}
	if v != ledger.Redacted || strings.Contains(string(b), "<SWANLAB_API_KEY>") {
		t.Errorf("config %s = %v; want %q and the value nowhere", start.Redacted[i], v, ledger.Redacted)
	}
}
