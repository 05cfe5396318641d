package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
)

// benchRuns is how many runs the runs-page benchmark's ledger holds: a
// team's ledger after a long project, every rollout and grading a run.
const benchRuns = 20000

// BenchmarkRunsPage answers the first and the last page of the runs of a
// ledger of benchRuns runs, every tenth failed (its reason read from its
// run.end), and a filtered page; the page is read with LIMIT and OFFSET,
// so its cost follows the page, not the ledger.
func BenchmarkRunsPage(b *testing.B) {
	l := ledgertest.New(b)
	ctx := context.Background()
	for i := 0; i < benchRuns; i += 500 {
		var recs []ledger.Record
		for j := i; j < i+500; j++ {
			run := fmt.Sprintf("rollout-%05d", j)
			end := ledger.FailedBody{RunEnd: ledger.RunEnd{Status: records.StatusOK}}
			if j%10 == 0 {
				end = ledger.FailedBody{RunEnd: ledger.RunEnd{Status: records.StatusFailed}, Reason: "endpoint unreachable"}
			}
			recs = append(recs, ledger.Record{Kind: records.KindRunStart, Run: run, Body: ledger.RunStart{Stage: []string{"rollout", "grade"}[j%2]}},
				ledger.Record{Kind: records.KindRunEnd, Run: run, Body: end})
		}
		if _, err := l.Append(ctx, recs...); err != nil {
			b.Fatal(err)
		}
	}
	s, err := New(l, Options{Loopback: true})
	if err != nil {
		b.Fatal(err)
	}
	last := strconv.Itoa(benchRuns / PageSize)
	for _, page := range []string{"/runs", "/runs?page=" + last, "/runs?stage=grade&status=failed&page=2"} {
		b.Run(page, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+page, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d", page, w.Code)
				}
			}
		})
	}
}
