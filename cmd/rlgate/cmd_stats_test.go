package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestStatsCalculators(t *testing.T) {
	t.Parallel()
	// Exact McNemar for b=10, c=2 is 0.0385742 (gonum distuv, statsmodels).
	code, out, _ := rlgate(t, "stats", "mcnemar", "--b", "10", "--c", "2", "--json")
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if p := m["exact_p"].(float64); math.Abs(p-0.0385742) > 1e-7 {
		t.Errorf("exact p = %v", p)
	}
	// Undefined statistics are absent from JSON and "n/a" in text, never 0.
	_, out, _ = rlgate(t, "stats", "mcnemar", "--b", "0", "--c", "0", "--json")
	if strings.Contains(out, "chi2") {
		t.Errorf("undefined chi-square appears in JSON: %s", out)
	}
	_, out, _ = rlgate(t, "stats", "mcnemar", "--b", "0", "--c", "0")
	if !strings.Contains(out, "n/a") || strings.Contains(out, "NaN") {
		t.Errorf("undefined chi-square not shown as n/a:\n%s", out)
	}
	if code, _, errOut := rlgate(t, "stats", "wilson", "--k", "3", "--n", "0"); code != exitUsage || !strings.Contains(errOut, "--n 0") {
		t.Errorf("wilson n=0: exit %d, %q", code, errOut)
	}
	if code, _, _ := rlgate(t, "stats", "holm", "0.2", "x"); code != exitUsage {
		t.Errorf("holm with a non-number: exit %d", code)
	}
	_, out, _ = rlgate(t, "stats", "passk", "--n", "10", "--c", "3", "--k", "5")
	if !strings.Contains(out, "pass@5 = 0.916667") {
		t.Errorf("passk: %s", out)
	}
}
