package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ui"
)

// TestTaskMatrixOfAGatedExperiment holds the per-task matrix and the
// comparison page to rlgate compare on the gate experiment: the matrix's
// counts are compare's b and c, each filter lists that many tasks, and the
// page, which takes the latest verdict's evaluations, shows those counts.
func TestTaskMatrixOfAGatedExperiment(t *testing.T) {
	x := buildGateExperiment(t)
	if code, v := x.gate(t); code != exitOK || !v.OK {
		t.Fatalf("gate: exit %d, failed %v", code, failedChecks(v))
	}
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "compare", "--runs", x.runs, "--baseline", audit.LabelBase, "--json")
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s", code, errOut)
	}
	var c audit.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := ledger.OpenReadOnly(ctx, x.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runs := make([]audit.LabeledRun, len(c.Models))
	want := map[string][2]int{}
	for i, m := range c.Models {
		runs[i] = m.LabeledRun
	}
	for _, p := range c.Pairs {
		want[p.Label] = [2]int{p.B, p.C}
	}
	m, err := audit.TaskMatrix(ctx, l, audit.MatrixOptions{Runs: runs, Baseline: audit.LabelBase, Limit: audit.MaxMatrixPage})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, p := range m.Pairs {
		got[p.Label] = [2]int{p.B, p.C}
		for i, f := range []audit.MatrixFilter{{Gained: p.Label}, {Lost: p.Label}} {
			fm, err := audit.TaskMatrix(ctx, l, audit.MatrixOptions{Runs: runs, Baseline: audit.LabelBase, Filter: f, Limit: audit.MaxMatrixPage})
			if err != nil {
				t.Fatal(err)
			}
			if fm.Selected != want[p.Label][i] || len(fm.Rows) != fm.Selected {
				t.Errorf("%+v: %d tasks selected, %d listed; compare counts %d", f, fm.Selected, len(fm.Rows), want[p.Label][i])
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matrix b, c differ from compare's (-compare +matrix):\n%s", diff)
	}
	if m.Tasks != c.Tasks || len(m.Rows) != c.Tasks {
		t.Errorf("matrix of %d tasks (%d rows), compare paired %d", m.Tasks, len(m.Rows), c.Tasks)
	}

	// The comparison page, with no evaluations named, shows the verdict's.
	s, err := ui.New(l, ui.Options{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/compare")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("compare page: %d %v\n%s", resp.StatusCode, err, body)
	}
	page := map[string][2]int{}
	for _, f := range regexp.MustCompile(`data-matrix-([bc])="([^"]+)">(\d+)<`).FindAllStringSubmatch(string(body), -1) {
		n, _ := strconv.Atoi(f[3])
		v := page[f[2]]
		v[map[string]int{"b": 0, "c": 1}[f[1]]] = n
		page[f[2]] = v
	}
	if diff := cmp.Diff(want, page); diff != "" {
		t.Errorf("page b, c differ from compare's (-compare +page):\n%s", diff)
	}
}
