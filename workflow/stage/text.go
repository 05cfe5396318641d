package stage

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/textout"
)

// WriteRun writes a stage's result and what became of its publish
// request, pub as rlgate run was given it (rlgate run).
func WriteRun(w io.Writer, r *Result, pub *Publish) error {
	if p := r.Preflight; p != nil && p.Passed {
		fmt.Fprintf(w, "rlgate: pre-flight (entry %d): %d databases present and as imported under %s; gold graded against itself scored 1 on %d of %d sampled tasks\n",
			r.PreflightSeq, p.Needed, p.DBRoot, p.SelfGrade.Passed, p.SelfGrade.Sample)
	}
	fmt.Fprintf(w, "rlgate: run %s (stage %s) %s", r.Run, r.Stage, r.Status)
	if r.Reason != "" {
		fmt.Fprintf(w, ": %s", r.Reason)
	}
	fmt.Fprintf(w, "\nrlgate: entries %d..%d, %d metric points, %.1fs\n", r.StartSeq, r.EndSeq, r.MetricPoints, r.DurationS)
	if n := len(r.MetricFindings); n > 0 {
		fmt.Fprintf(w, "rlgate: %d metrics warning(s) recorded in run.end (metric_findings); the training audit will see them\n", n)
	}
	for name, d := range r.Outputs {
		fmt.Fprintf(w, "rlgate: output %s %s\n", name, d)
	}
	if p := r.PublishRequest; p != nil {
		fmt.Fprintf(w, "rlgate: publish to %s requested (entry %d); it happens when a gate passes for model %s\n", p.To, p.Seq, p.ModelIdentity)
	} else if pub != nil {
		fmt.Fprintf(w, "rlgate: the stage did not succeed; no publish to %s was requested\n", pub.To)
	}
	return nil
}

// WriteImported writes what an import of the tracker's run at source
// recorded and the findings its metrics left (rlgate import-run).
func WriteImported(w io.Writer, res *runner.Result, source string) error {
	fmt.Fprintf(w, "rlgate: imported %s as run %s (stage %s): %s", source, res.Run, res.Stage, res.Status)
	if res.Reason != "" {
		fmt.Fprintf(w, ": %s", res.Reason)
	}
	fmt.Fprintf(w, "\nrlgate: entries %d..%d, %d metric points read as %s\n", res.StartSeq, res.EndSeq, res.MetricPoints, res.MetricFormats[source])
	for _, f := range res.MetricFindings {
		fmt.Fprintf(w, "rlgate: finding: %s\n", f)
	}
	return nil
}

// ImportFailure says why an imported run did not end ok, for the
// command's exit status; empty when it did.
func ImportFailure(res *runner.Result) string {
	if res.Status == records.StatusOK {
		return ""
	}
	return fmt.Sprintf("imported run %s is %s: %s", res.Run, res.Status, res.Reason)
}

// Series is a run's metric series as rlgate metrics prints them; --json
// prints it as it is.
type Series struct {
	Run    string                  `json:"run"`
	Series map[string][][2]jsonNum `json:"series"`
	keys   []string                // the order to print them in
}

// jsonNum is a step or value as JSON holds it: a number, or the name of a
// non-finite value.
type jsonNum float64

func (v jsonNum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// NewSeries is the series Metrics read for run, printed in keys' order.
func NewSeries(run string, series map[string][]ledger.MetricPoint, keys []string) *Series {
	out := &Series{Run: run, Series: map[string][][2]jsonNum{}, keys: keys}
	for k, pts := range series {
		s := make([][2]jsonNum, len(pts))
		for i, p := range pts {
			s[i] = [2]jsonNum{jsonNum(p.Step), jsonNum(p.Value)}
		}
		out.Series[k] = s
	}
	return out
}

// WriteCSV writes key,step,value rows.
func (s *Series) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"key", "step", "value"})
	for _, k := range s.keys {
		for _, p := range s.Series[k] {
			_ = cw.Write([]string{k, strconv.FormatInt(int64(p[0]), 10), strconv.FormatFloat(float64(p[1]), 'g', -1, 64)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteText writes a table of each key's points, steps and first and
// last values.
func (s *Series) WriteText(w io.Writer) error {
	t := textout.NewTable(w, "key", "points", "steps", "first", "last")
	for _, k := range s.keys {
		pts := s.Series[k]
		first, last := pts[0], pts[len(pts)-1]
		_ = t.Append([]string{k, strconv.Itoa(len(pts)), fmt.Sprintf("%d..%d", int64(first[0]), int64(last[0])),
			strconv.FormatFloat(float64(first[1]), 'g', 6, 64), strconv.FormatFloat(float64(last[1]), 'g', 6, 64)})
	}
	return t.Render()
}
