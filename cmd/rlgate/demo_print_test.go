package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/workflow/gate"
)

// TestBriefVerdict: the demo's summary of a verdict shows the claims and
// the first findings of each failed check, and counts the rest, so a leak
// found in every task does not print one row per task.
func TestBriefVerdict(t *testing.T) {
	t.Parallel()
	v := &audit.Verdict{Failed: 5, Policy: audit.Policy{Name: "p"}}
	for range 5 {
		v.Checks = append(v.Checks, audit.GateCheck{Name: "audit gold: no-gold-in-prompts", Message: "leak"})
	}
	v.Checks = append(v.Checks, audit.GateCheck{Name: "audit budget: same-protocol", OK: true},
		audit.GateCheck{Name: "audit split: split-task-ids", OK: true},
		audit.GateCheck{Name: "claim rl > base", OK: true, Message: "gain"})
	var full, brief strings.Builder
	if err := gate.WriteVerdict(&full, v, false); err != nil {
		t.Fatal(err)
	}
	if err := gate.WriteVerdict(&brief, v, true); err != nil {
		t.Fatal(err)
	}
	rows := func(s string) (n map[string]int) {
		n = map[string]int{}
		for _, line := range strings.Split(s, "\n") {
			for _, name := range []string{"no-gold-in-prompts", "same-protocol", "split-task-ids", "claim rl > base"} {
				if strings.Contains(line, "│ "+name) || strings.Contains(line, ": "+name+" ") {
					n[name]++
				}
			}
		}
		return n
	}
	if diff := cmp.Diff(map[string]int{"no-gold-in-prompts": 5, "same-protocol": 1, "split-task-ids": 1, "claim rl > base": 1}, rows(full.String())); diff != "" {
		t.Errorf("full verdict rows (-want +got):\n%s\n%s", diff, full.String())
	}
	if diff := cmp.Diff(map[string]int{"no-gold-in-prompts": gate.BriefFindings, "claim rl > base": 1}, rows(brief.String())); diff != "" {
		t.Errorf("brief verdict rows (-want +got):\n%s\n%s", diff, brief.String())
	}
	for _, want := range []string{"and 2 more findings of audit gold: no-gold-in-prompts", "and 2 audit checks passed"} {
		if !strings.Contains(brief.String(), want) {
			t.Errorf("brief verdict lacks %q:\n%s", want, brief.String())
		}
	}
}

// TestVerdictClaimResults: a claim holds only when the whole gate passes,
// so under a failed gate the table shows a claim whose test passed as
// "would pass" and the others as "not supported", never PASS; under a
// passed gate they read PASS.
func TestVerdictClaimResults(t *testing.T) {
	t.Parallel()
	checks := []audit.GateCheck{
		{Name: "audit training: lr-positive", Message: "rl: lr 0"},
		{Name: "claim rl > base", OK: true, Message: "gain"},
		{Name: "claim rl > noupdate", Message: "no gain"},
	}
	results := func(v *audit.Verdict) map[string]string {
		var b strings.Builder
		if err := gate.WriteVerdict(&b, v, false); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, line := range strings.Split(b.String(), "\n") {
			cells := strings.Split(line, "│")
			if len(cells) < 3 {
				continue
			}
			if name := strings.TrimSpace(cells[1]); strings.HasPrefix(name, "audit ") || strings.HasPrefix(name, "claim ") {
				got[name] = strings.TrimSpace(cells[2])
			}
		}
		return got
	}
	failed := &audit.Verdict{Failed: 2, Policy: audit.Policy{Name: "p"}, Checks: checks}
	want := map[string]string{"audit training: lr-positive": "FAIL", "claim rl > base": "would pass", "claim rl > noupdate": "not supported"}
	if diff := cmp.Diff(want, results(failed)); diff != "" {
		t.Errorf("failed gate (-want +got):\n%s", diff)
	}
	passed := &audit.Verdict{OK: true, Policy: audit.Policy{Name: "p"}, Checks: []audit.GateCheck{checks[1]}}
	if diff := cmp.Diff(map[string]string{"claim rl > base": "PASS"}, results(passed)); diff != "" {
		t.Errorf("passed gate (-want +got):\n%s", diff)
	}
}
