package ledger

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// realText lists real text the value rule must leave alone: every Spider
// and BIRD question, gold query and schema, the Spider variants, real
// model predictions (DAIL-SQL with GPT-4, BIRD's GPT-4 and Mixtral
// baselines), real trainer logs, and the reference vectors' digests.
var realText = []string{
	"../testdata/spider/dev.json", "../testdata/spider/dev_gold.sql", "../testdata/spider/tables.json",
	"../testdata/spider/predictions/dail-sql-gpt4.txt",
	"../testdata/bird/mini_dev_sqlite.json", "../testdata/bird/mini_dev_sqlite_gold.sql", "../testdata/bird/dev_tables.json",
	"../testdata/bird/predictions/gpt-4.json", "../testdata/bird/predictions/mixtral-8x7b.json",
	"../testdata/spider-variants/spider-dk/Spider-DK.json", "../testdata/spider-variants/spider-realistic/spider-realistic.json",
	"../testdata/spider-variants/spider-syn/dev.json",
	"../testdata/trainer-logs/llamafactory-trainer_log.jsonl", "../testdata/trainer-logs/openrlhf-console.log",
	"../testdata/trainer-logs/skyrl-console.log", "../testdata/trainer-logs/trl-grpo-trainer_state.json",
	"testdata/reference/entry-hash-vectors.json", "testdata/reference/canonical-json-vectors.json",
}

// TestValueRuleLeavesRealTextAlone: no line of realText, nor a model name,
// path or number, is changed by the value rule.
func TestValueRuleLeavesRealTextAlone(t *testing.T) {
	lines := 0
	for _, f := range realText {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for n := 1; sc.Scan(); n++ {
			lines++
			if out, found := maskText(sc.Text()); len(found) > 0 {
				t.Errorf("%s:%d: masked %q: %s", filepath.Base(f), n, found, out)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"Qwen/Qwen2.5-Coder-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "gpt-4o-2024-08-06",
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "claude-3-5-sonnet-20241022", "sk-learn", "hf_hub_download",
		"blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"/home/user/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B/snapshots/abc/model.safetensors",
		"1e-6 0.000001 -3.25 12345678901234567890", "SELECT password FROM users WHERE password = 'x' AND T1.key=T2.key",
		"max_tokens=512 top_p=0.95 PATH=/usr/bin PWD=/work patience=3"} {
		if out, found := maskText(s); len(found) > 0 {
			t.Errorf("masked %q in %q: %s", found, s, out)
		}
	}
	t.Logf("%d real lines unchanged", lines)
}
