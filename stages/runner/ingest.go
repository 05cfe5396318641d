package runner

import (
	"context"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
)

// MetricFile is a trainer metrics file a stage writes, and its format
// (empty or auto: detected from the file once it says enough).
type MetricFile struct {
	Path   string         `json:"path"`
	Format metrics.Format `json:"format,omitempty"`
}

// metricsPerEntry bounds the points in one metrics entry.
const metricsPerEntry = 50000

// ingester tails one metrics file into the ledger while the stage runs.
// A problem with the file (it does not parse, it never appears, a key is
// written twice in one record) is a finding: printed on warn as soon as it
// is seen, kept for run.end, and never a change to the stage's outcome.
type ingester struct {
	file     MetricFile
	warn     io.Writer // the terminal's stderr; nil: none
	tailer   *metrics.Tailer
	points   int64
	findings []string
	stopped  bool           // a parse error ended ingestion of this file
	prior    *priorFile     // the file as it was before the stage started, until the stage touches it
	from     metrics.Cursor // where reading starts: past a prior file's lines when the stage appended
	priorHow string         // how a prior file was read (run.end's metric_prior_files)
}

// finding records a problem with the metrics file and reports it at once.
func (g *ingester) finding(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.findings = append(g.findings, msg)
	if g.warn != nil {
		fmt.Fprintf(g.warn, "rlgate: warning: %s\n", msg)
	}
}

// poll appends the complete records written since the last poll; with
// final set, the writer has exited and a trailing record is complete too.
// Only a failure to record is an error; what is wrong with the file is a
// finding. The first parse error stops ingestion of the file: what follows
// a fault cannot be placed reliably, so it is not recorded.
func (g *ingester) poll(ctx context.Context, l *ledger.Ledger, run string, final bool) error {
	if g.stopped {
		return nil
	}
	if g.tailer == nil {
		if _, err := os.Stat(g.file.Path); err != nil {
			if final {
				g.finding("metrics %s: the stage never wrote it", g.file.Path)
			}
			return nil
		}
		if g.prior != nil {
			// Decided once: a file found truncated stays read from the
			// start, however it looks by the time its format shows.
			from, how, wait, err := g.prior.start(g.file.Path, final)
			switch {
			case err != nil:
				g.stopped = true
				g.finding("%v; it was not ingested", err)
				return nil
			case wait:
				return nil
			}
			g.prior, g.from, g.priorHow = nil, from, how
			if g.warn != nil {
				fmt.Fprintf(g.warn, "rlgate: metrics %s: %s\n", g.file.Path, how)
			}
		}
		t, err := metrics.NewTailer(g.file.Path, metrics.Options{Format: g.file.Format}, g.from)
		if err != nil {
			// An empty or just-created file may not show its format yet.
			if final {
				g.finding("metrics %s: %v", g.file.Path, err)
			}
			return nil
		}
		g.tailer = t
		if g.file.Format == "" || g.file.Format == metrics.FormatAuto {
			if g.warn != nil {
				fmt.Fprintf(g.warn, "rlgate: metrics %s: read as %s, detected from its first lines (recorded in run.end; if wrong, name the format: %s:FORMAT)\n", g.file.Path, t.Format(), g.file.Path)
			}
		}
	}
	next := g.tailer.Next
	if final {
		next = g.tailer.Final
	}
	pts, perr := next()
	if perr != nil {
		g.stopped = true
		g.finding("%v; the rest of %s was not ingested", perr, g.file.Path)
	}
	if final || g.stopped {
		if n := g.tailer.Stats().Duplicates; n > 0 {
			g.finding("metrics %s: %d keys written twice in one record; the last value was kept", g.file.Path, n)
		}
		if r := g.tailer.Run(); r != nil {
			for _, f := range r.Findings {
				g.finding("%s", f)
			}
		}
	}
	recs := metricRecords(run, g.file.Path, g.tailer.Format(), pts, g.tailer.Cursor())
	if tr := g.tailer.Run(); final && tr != nil {
		// A tracker's config, summary and console output, by digest.
		abs, _ := filepath.Abs(g.file.Path)
		arts, blobs, err := trackerArtifacts(l, new(ledger.Redactor), tr, abs)
		if err != nil {
			return err
		}
		for i, a := range arts {
			recs = append(recs, ledger.Record{Kind: records.KindArtifact, Run: run, Body: a, Blobs: []ledger.Digest{blobs[i]}})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if _, err := l.Append(ctx, recs...); err != nil {
		return err
	}
	g.points += int64(len(pts))
	return nil
}

// metricRecords turns points read from source into metrics entries of run,
// every one of body version 2 (ledger.PackedMetrics), whatever its size:
// one way to write them, which every reader of a run written since reads.
// Large reads are split into entries of metricsPerEntry points, which the
// ledger encodes in parallel; only the last carries the cursor, since the
// cursor is only true once every point before it is stored.
func metricRecords(run, source string, format metrics.Format, pts []metrics.Point, c metrics.Cursor) []ledger.Record {
	return metricEntries(run, packChunks(nil, source, format, pts), c)
}

// packChunks appends to bodies the points pts packed into bodies of at
// most metricsPerEntry points each.
func packChunks(bodies []ledger.PackedMetrics, source string, format metrics.Format, pts []metrics.Point) []ledger.PackedMetrics {
	for start := 0; start < len(pts); start += metricsPerEntry {
		body := ledger.PackMetrics(asLedgerPoints(pts[start:min(start+metricsPerEntry, len(pts))]))
		body.Source, body.Format = source, string(format)
		bodies = append(bodies, body)
	}
	return bodies
}

// metricEntries makes the metrics entries of run from bodies, the last
// one carrying the cursor.
func metricEntries(run string, bodies []ledger.PackedMetrics, c metrics.Cursor) []ledger.Record {
	recs := make([]ledger.Record, len(bodies))
	for i, body := range bodies {
		if i == len(bodies)-1 {
			body.Cursor = map[string]int64{"offset": c.Offset, "line": c.Line, "records": c.Records}
		}
		recs[i] = ledger.Record{Kind: records.KindMetrics, Run: run, Body: body}
	}
	return recs
}

// asLedgerPoints views parsed points as the ledger's without copying them
// (a large import holds millions, hundreds of MB). The conversion of one
// point to the other compiles only while the two types have the same
// fields in the same order, so the memory layouts are the same.
func asLedgerPoints(pts []metrics.Point) []ledger.MetricPoint {
	_ = ledger.MetricPoint(metrics.Point{})
	return unsafe.Slice((*ledger.MetricPoint)(unsafe.Pointer(unsafe.SliceData(pts))), len(pts))
}
