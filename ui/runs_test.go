package ui

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
)

// TestRunsPages: the runs page shows PageSize runs a page in start
// order, links the next and previous pages with the filter kept, and its
// filters select by stage and status; a page past the end is empty.
func TestRunsPages(t *testing.T) {
	l := ledgertest.New(t)
	var recs []ledger.Record
	var all, failedGrades []string
	for i := range 2*PageSize + 7 {
		run := fmt.Sprintf("r%03d", i)
		stage, status := []string{"rollout", "grade"}[i%2], records.StatusOK
		if i%3 == 0 {
			status = records.StatusFailed
		}
		recs = append(recs, ledger.Record{Kind: records.KindRunStart, Run: run, Body: ledger.RunStart{Stage: stage}},
			ledger.Record{Kind: records.KindRunEnd, Run: run, Body: ledger.FailedBody{RunEnd: ledger.RunEnd{Status: status}, Reason: "reason of " + run}})
		all = append(all, run)
		if stage == "grade" && status == records.StatusFailed {
			failedGrades = append(failedGrades, run)
		}
	}
	if _, err := l.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, l, Options{Loopback: true})
	row := regexp.MustCompile(`<td><a href="/run\?id=(r\d+)">r\d+</a></td>`)
	read := func(path string) (runs []string, page string) {
		t.Helper()
		resp, page := get(t, ts, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		for _, m := range row.FindAllStringSubmatch(page, -1) {
			runs = append(runs, m[1])
		}
		return runs, page
	}
	var got []string
	for p := 1; p <= 3; p++ {
		runs, page := read(fmt.Sprintf("/runs?page=%d", p))
		got = append(got, runs...)
		if want := fmt.Sprintf("page %d of 3", p); !regexp.MustCompile(want).MatchString(page) {
			t.Errorf("page %d does not say %q", p, want)
		}
	}
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("runs over three pages (-want +got):\n%s", diff)
	}
	if runs, _ := read("/runs?page=4"); len(runs) != 0 {
		t.Errorf("page 4: %v", runs)
	}
	runs, page := read("/runs?stage=grade&status=failed")
	if !slices.Equal(runs, failedGrades) || !regexp.MustCompile(`<span id="runs-total">`+fmt.Sprint(len(failedGrades))+`</span>`).MatchString(page) {
		t.Errorf("failed grades: %v, want %v", runs, failedGrades)
	}
	if !regexp.MustCompile(`reason of r003`).MatchString(page) {
		t.Error("a failed run's reason is not shown")
	}
	if _, page = read("/runs?stage=rollout&page=2"); !strings.Contains(page, `rel="prev" href="/runs?page=1&amp;stage=rollout"`) {
		t.Error("page 2 of the rollouts does not link page 1 of the rollouts")
	}
}
