package spidersql

import (
	"strings"
	"testing"
)

// TestExactMatchMatchesOfficial: the exact set match of the DAIL-SQL
// predictions equals evaluation.py --etype match's on all 1034 Spider dev
// items (724 matches), schemas and foreign keys from tables.json.
func TestExactMatchMatchesOfficial(t *testing.T) {
	schemas, kmaps := tablesJSON(t, spider+"/tables.json")
	gold := lines(t, spider+"/dev_gold.sql")
	preds := lines(t, spider+"/predictions/dail-sql-gpt4.txt")
	official := lines(t, spider+"/predictions/dail-sql-gpt4.official-em.tsv")[1:]
	if len(preds) != 1034 || len(official) != 1034 {
		t.Fatalf("%d predictions, %d official; want 1034", len(preds), len(official))
	}
	matches, unparsed, diffs := 0, 0, 0
	for i, g := range gold {
		ok, perr, gerr := ExactMatch(schemas[g[1]], kmaps[g[1]], strings.Join(preds[i], "\t"), g[0])
		if gerr != nil {
			t.Fatalf("item %d: gold: %v", i, gerr)
		}
		if perr != nil {
			unparsed++
		}
		if ok {
			matches++
		}
		if want := official[i][3] == "1"; ok != want {
			diffs++
			t.Errorf("item %d (%s): EM %v, official %v (parse: %v)\n  pred %s\n  gold %s", i, g[1], ok, want, perr, preds[i][0], g[0])
		}
	}
	t.Logf("EM %d/1034, %d predictions unparsed, %d disagreements", matches, unparsed, diffs)
}

// TestExactMatchAllocations bounds the allocations of grading the 1034
// DAIL-SQL predictions (prediction and gold parsed, both rebuilt and
// compared): garbage collection was a tenth of `rlgate grade --metric
// spider-em`'s CPU time (docs/BENCHMARKS.md), and this count went from
// ~147,000 to ~95,000 when the column-id sets, the keyword maps and the
// per-token lower-casing went. A change that brings them back fails here.
func TestExactMatchAllocations(t *testing.T) {
	schemas, kmaps := tablesJSON(t, spider+"/tables.json")
	gold := lines(t, spider+"/dev_gold.sql")
	preds := lines(t, spider+"/predictions/dail-sql-gpt4.txt")
	joined := make([]string, len(preds))
	for i, p := range preds {
		joined[i] = strings.Join(p, "\t")
	}
	const limit = 105_000
	n := testing.AllocsPerRun(1, func() {
		for i, g := range gold {
			ExactMatch(schemas[g[1]], kmaps[g[1]], joined[i], g[0])
		}
	})
	if n > limit {
		t.Errorf("%.0f allocations for the 1034 items, want at most %d", n, limit)
	}
}
