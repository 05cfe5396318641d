package runner

import (
	"context"
	"fmt"
	"os"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
)

// MetricFile is a trainer metrics file a stage writes, and its format
// (empty: detected from the file).
type MetricFile struct {
	Path   string         `json:"path"`
	Format metrics.Format `json:"format,omitempty"`
}

// metricsPerEntry bounds the points in one metrics entry.
const metricsPerEntry = 50000

// ingester tails one metrics file into the ledger while the stage runs.
type ingester struct {
	file   MetricFile
	tailer *metrics.Tailer
	points int64
}

// poll appends the complete records written since the last poll; with
// final set, the writer has exited and a trailing record is complete too.
// A file that does not exist yet is not an error until the stage has ended.
func (g *ingester) poll(ctx context.Context, l *ledger.Ledger, run string, final bool) error {
	if g.tailer == nil {
		if _, err := os.Stat(g.file.Path); err != nil {
			if final {
				return fmt.Errorf("metrics %s: the stage never wrote it", g.file.Path)
			}
			return nil
		}
		t, err := metrics.NewTailer(g.file.Path, metrics.Options{Format: g.file.Format}, metrics.Cursor{})
		if err != nil {
			return err
		}
		g.tailer = t
	}
	next := g.tailer.Next
	if final {
		next = g.tailer.Final
	}
	pts, err := next()
	if err != nil {
		return err
	}
	if len(pts) == 0 {
		return nil
	}
	// Large reads are split into entries of metricsPerEntry points, which
	// the ledger encodes in parallel; only the last carries the cursor,
	// since the cursor is only true once every point before it is stored.
	c := g.tailer.Cursor()
	var recs []ledger.Record
	for start := 0; start < len(pts); start += metricsPerEntry {
		chunk := pts[start:min(start+metricsPerEntry, len(pts))]
		body := ledger.Metrics{Source: g.file.Path, Format: string(g.tailer.Format()), Points: make([]ledger.MetricPoint, len(chunk))}
		for i, p := range chunk {
			body.Points[i] = ledger.MetricPoint{Step: p.Step, Key: p.Key, Value: p.Value}
		}
		if start+metricsPerEntry >= len(pts) {
			body.Cursor = map[string]int64{"offset": c.Offset, "line": c.Line, "records": c.Records}
		}
		recs = append(recs, ledger.Record{Kind: ledger.KindMetrics, Run: run, Body: body})
	}
	if _, err := l.Append(ctx, recs...); err != nil {
		return err
	}
	g.points += int64(len(pts))
	return nil
}
