package main

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
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
	t.Parallel()
	x := buildGateExperiment(t)
	if code, v := x.gate(t); code != exitOK || !v.OK {
		t.Fatalf("gate: exit %d, failed %v", code, failedChecks(v))
	}
	c := compareJSON(t, x.ledger, x.runs)
	ctx := context.Background()
	l, err := ledger.OpenReadOnly(ctx, x.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runs := make([]audit.LabeledRun, len(c.Models))
	for i, m := range c.Models {
		runs[i] = m.LabeledRun
	}
	want := pairCounts(c)
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
	if diff := cmp.Diff(want, matrixCounts(string(body))); diff != "" {
		t.Errorf("page b, c differ from compare's (-compare +page):\n%s", diff)
	}
}

// uiCompare: the comparison page of the evaluations runs (compare's
// --runs) shows, pair by pair, the b and c rlgate compare --json gives on
// the ledger at loc.
func uiCompare(t *testing.T, ts *httptest.Server, loc, runs string) {
	page := uiGet(t, ts, "/compare?"+url.Values{"runs": {runs}, "baseline": {audit.LabelBase}}.Encode())
	if diff := cmp.Diff(pairCounts(compareJSON(t, loc, runs)), matrixCounts(page)); diff != "" {
		t.Errorf("page b, c differ from compare's (-compare +page):\n%s", diff)
	}
	// The first pair of a task's episodes the matrix links to opens, two
	// sides, each with its grading.
	link := regexp.MustCompile(`href="(/trajectory\?[^"]*&amp;b=[^"]*)"`).FindStringSubmatch(page)
	if link == nil {
		t.Fatalf("the comparison page links no two episodes side by side:\n%.2000s", page)
	}
	ep := uiGet(t, ts, html.UnescapeString(link[1]))
	if n := strings.Count(ep, `<section class="side"`); n != 2 {
		t.Errorf("%s: %d sides, want 2", link[1], n)
	}
}

// compareJSON is rlgate compare --json of runs against base on the ledger
// at loc.
func compareJSON(t *testing.T, loc, runs string) audit.Comparison {
	t.Helper()
	code, out, errOut := rlgate(t, "--ledger", loc, "compare", "--runs", runs, "--baseline", audit.LabelBase, "--json")
	if code != exitOK {
		t.Fatalf("compare: exit %d\n%s", code, errOut)
	}
	var c audit.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// pairCounts are a comparison's b and c by the label paired with the
// baseline.
func pairCounts(c audit.Comparison) map[string][2]int {
	counts := map[string][2]int{}
	for _, p := range c.Pairs {
		counts[p.Label] = [2]int{p.B, p.C}
	}
	return counts
}

// matrixCounts reads the b and c the comparison page shows above its
// matrix, by label.
func matrixCounts(page string) map[string][2]int {
	counts := map[string][2]int{}
	for _, f := range regexp.MustCompile(`data-matrix-([bc])="([^"]+)">(\d+)<`).FindAllStringSubmatch(page, -1) {
		n, _ := strconv.Atoi(f[3])
		v := counts[f[2]]
		v[map[string]int{"b": 0, "c": 1}[f[1]]] = n
		counts[f[2]] = v
	}
	return counts
}
