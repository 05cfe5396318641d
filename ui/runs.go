package ui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// PageSize is how many rows a list page shows: every list is read a page
// at a time, so memory is bounded by it and not by the ledger.
const PageSize = 50

// runRow is a run as the runs page lists it.
type runRow struct {
	ledger.Run
	Duration string
	Reason   string // the run.end's reason, where its recorder gave one
}

// runsBody is the runs page.
type runsBody struct {
	Runs          []runRow
	Stages        []string
	Statuses      []records.Status
	Stage, Status string
	Total, Page   int
	Pages         int
	URL           *url.URL
}

// pageNumber reads ?page (from 1).
func pageNumber(r *http.Request) (int, error) {
	p := r.URL.Query().Get("page")
	if p == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 {
		return 0, badRequest("page %q: want a page number from 1", p)
	}
	return n, nil
}

// pageCount is how many pages of PageSize rows total rows fill (at least 1).
func pageCount(total int) int { return max(1, (total+PageSize-1)/PageSize) }

// runs lists the runs table, filtered by ?stage and ?status, a page at a
// time, with the reason each run's end gives, as rlgate runs does.
func (s *Server) runs(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	f := ledger.RunFilter{Stage: q.Get("stage"), Status: records.Status(q.Get("status"))}
	n, err := pageNumber(r)
	if err != nil {
		return err
	}
	b := runsBody{Stage: f.Stage, Status: string(f.Status), Page: n, URL: r.URL,
		Statuses: []records.Status{records.StatusRunning, records.StatusOK, records.StatusFailed, records.StatusInterrupted}}
	if b.Stages, err = s.l.RunStages(ctx); err != nil {
		return err
	}
	if b.Total, err = s.l.CountRuns(ctx, f); err != nil {
		return err
	}
	b.Pages = pageCount(b.Total)
	runs, err := s.l.RunsPage(ctx, f, (n-1)*PageSize, PageSize)
	if err != nil {
		return err
	}
	for _, run := range runs {
		row := runRow{Run: run, Duration: duration(run.StartedAt, run.EndedAt)}
		if run.EndedSeq != nil {
			// Every writer's run.end carries Reason as Fail writes it.
			end, err := ledger.DecodeEntry[ledger.FailedBody](ctx, s.l, *run.EndedSeq)
			if err != nil {
				return err
			}
			row.Reason = end.Reason
		}
		b.Runs = append(b.Runs, row)
	}
	return s.render(w, r, "runs", "Runs", b)
}
