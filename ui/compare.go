package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stats"
)

// compareBody is the comparison page: the paired table as rlgate compare
// prints it (audit.Compare's, through audit.CompareWithMatrix) and a page
// of the per-task matrix under the filter the query names.
type compareBody struct {
	// From says where the evaluations came from: the verdict whose
	// subjects they are, or nil when the query named them.
	From       *audit.Verdict
	Comparison *audit.Comparison
	Matrix     *audit.Matrix
	// Query is the part of the URL that names the evaluations and the
	// statistics' parameters, which every filter link keeps.
	Query url.Values
	Page  int
	Pages int
	URL   *url.URL
	RunOf map[string]string // label → run, to open episodes side by side
}

// compareOptions reads which evaluations to compare and how: ?runs=
// LABEL=RUN,... with ?baseline, ?alpha, ?seed and ?resamples as rlgate
// compare takes them (same defaults), or, without ?runs, the evaluations
// of the latest gate verdict under its policy's parameters, the baseline
// being base when there is one: the runs and numbers the report shows.
func (s *Server) compareOptions(r *http.Request) (audit.CompareOptions, *audit.Verdict, url.Values, error) {
	q := r.URL.Query()
	keep := url.Values{}
	o := audit.CompareOptions{Baseline: q.Get("baseline"), Alpha: stats.DefaultAlpha, Seed: 1, B: stats.DefaultResamples, ByDifficulty: true}
	if spec := q.Get("runs"); spec != "" {
		for _, part := range strings.Split(spec, ",") {
			label, run, ok := strings.Cut(part, "=")
			if !ok {
				return o, nil, nil, badRequest("runs %q: want LABEL=RUN,... such as base=eval-base,rl=eval-rl", spec)
			}
			var err error
			if o.Runs, err = audit.AddLabeledRun(o.Runs, label, run); err != nil {
				return o, nil, nil, badRequest("runs %q: %v", spec, err)
			}
		}
		for _, p := range []struct {
			name string
			set  func(string) error
		}{
			{"alpha", func(v string) (err error) { o.Alpha, err = strconv.ParseFloat(v, 64); return }},
			{"seed", func(v string) (err error) { o.Seed, err = strconv.ParseUint(v, 10, 64); return }},
			{"resamples", func(v string) (err error) { o.B, err = strconv.Atoi(v); return }},
		} {
			if v := q.Get(p.name); v != "" {
				if err := p.set(v); err != nil {
					return o, nil, nil, badRequest("%s %q: want a number", p.name, v)
				}
				keep.Set(p.name, v)
			}
		}
		keep.Set("runs", spec)
		if o.Baseline != "" {
			keep.Set("baseline", o.Baseline)
		}
		return o, nil, keep, nil
	}
	v, err := audit.LatestVerdict(r.Context(), s.l, audit.Subjects{})
	if err != nil {
		return o, nil, nil, err
	}
	if v == nil {
		return o, nil, nil, badRequest("the ledger holds no gate verdict to take the evaluations from: name them, as /compare?runs=base=RUN,rl=RUN")
	}
	p := v.Policy
	o.Runs, o.Alpha, o.Seed, o.B, o.Power = p.Subjects.Runs, p.Alpha, p.Seed, p.Resamples, p.Power
	if o.Baseline == "" && slices.ContainsFunc(o.Runs, func(r audit.LabeledRun) bool { return r.Label == audit.LabelBase }) {
		o.Baseline = audit.LabelBase
	}
	if q.Has("baseline") {
		keep.Set("baseline", o.Baseline)
	}
	return o, v, keep, nil
}

// matrixFilter reads the matrix filter of the query: ?gained=LABEL,
// ?lost=LABEL, ?db, ?difficulty, ?fragile=1, ?unfinished=1.
func matrixFilter(q url.Values) audit.MatrixFilter {
	return audit.MatrixFilter{Gained: q.Get("gained"), Lost: q.Get("lost"), DBID: q.Get("db"), Difficulty: q.Get("difficulty"),
		Fragile: q.Get("fragile") == "1", Unfinished: q.Get("unfinished") == "1"}
}

// compare is the comparison page.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	o, v, keep, err := s.compareOptions(r)
	if err != nil {
		return err
	}
	n, err := pageNumber(r)
	if err != nil {
		return err
	}
	b := compareBody{From: v, Query: keep, Page: n, URL: r.URL, RunOf: map[string]string{}}
	b.Comparison, b.Matrix, err = audit.CompareWithMatrix(ctx, s.l, o, matrixFilter(r.URL.Query()), (n-1)*PageSize, PageSize)
	if err != nil {
		return badRequest("%v", err)
	}
	b.Pages = pageCount(b.Matrix.Selected)
	for _, lr := range o.Runs {
		b.RunOf[lr.Label] = lr.Run
	}
	return s.render(w, r, "compare", "Comparison", b)
}

// compareURL is the comparison page of the evaluations keep names, under
// the filter given as name, value pairs.
func compareURL(keep url.Values, filter ...string) string {
	q := url.Values{}
	for k, v := range keep {
		q[k] = v
	}
	for i := 0; i+1 < len(filter); i += 2 {
		q.Set(filter[i], filter[i+1])
	}
	if len(q) == 0 {
		return "/compare"
	}
	return "/compare?" + q.Encode()
}

// trajectoryURL is the page of task's episodes under evaluations a and,
// when not empty, b side by side.
func trajectoryURL(task, a, b string) string {
	q := url.Values{"task": {task}, "a": {a}}
	if b != "" {
		q.Set("b", b)
	}
	return "/trajectory?" + q.Encode()
}

// The comparison page's helpers, beside the layout's (render.go).
func init() {
	funcs["compareURL"] = compareURL
	funcs["trajectoryURL"] = trajectoryURL
	funcs["pct"] = func(alpha float64) string { return fmt.Sprintf("%g%%", 100*(1-alpha)) }
	funcs["mul100"] = func(x float64) float64 { return 100 * x }
}
