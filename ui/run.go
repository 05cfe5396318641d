package ui

import (
	"encoding/json"
	"html/template"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/stages/runner"
)

// Bounds of a run page: what one page shows of a run's log and metrics,
// so a long run's page stays quick and small; the log pages on.
const (
	logPageBytes  = 256 << 10
	logPageChunks = 32
	maxCurves     = 32
	maxCurveSeqs  = 20
)

// runBody is a run's page.
type runBody struct {
	ledger.Run
	Duration  string
	Start     runner.StartBody
	Params    []keyValue
	Env       []keyValue
	End       *runner.EndBody
	Artifacts []artifactView
	Log       []logView
	LogNext   int64 // the last chunk shown when more follow, else 0
	Curves    []curveView
	MoreKeys  int // metric keys beyond maxCurves, not drawn
	GPUSeqs   []int64
	Entries   []entryHead
	After     int64 // the entries listed follow this seq
	Next      int64 // the last entry listed when more follow, else 0
}

type keyValue struct{ Key, Value string }

// sortedPairs is m's pairs sorted by key.
func sortedPairs(m map[string]string) []keyValue {
	var out []keyValue
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, keyValue{k, m[k]})
	}
	return out
}

// artifactView is an artifact entry with the run that produced an input,
// as recorded, and the blobs the entry names, re-hashed.
type artifactView struct {
	Seq int64
	ledger.Artifact
	ProducedBy *runner.Lineage `json:"produced_by"`
	Blobs      []blobCheck     `json:"-"`
}

// logView is one log chunk as shown: its text cut at the page's budget.
type logView struct {
	Seq int64
	runner.LogChunk
	Text string
	Cut  bool // the chunk holds more than is shown
	Blob blobCheck
}

// curveView is one metric key of the run drawn as the report draws a
// curve, with the entries behind it.
type curveView struct {
	reports.Curve
	Chart    template.HTML
	ShowSeqs []int64
	MoreSeqs int
}

// entryHead is an entry as a list shows it.
type entryHead struct {
	Seq  int64
	Kind string
	At   string
	Hash ledger.Digest
}

// seqParam reads the seq query q (0 when absent).
func seqParam(r *http.Request, q string) (int64, error) {
	v := r.URL.Query().Get(q)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s %q: want an entry's seq", q, v)
	}
	return n, nil
}

// run shows one run (?id=): its row, its command, parameters and
// environment as run.start recorded them (the ledger redacted secrets
// before recording), its end, its inputs and outputs by digest with each
// blob re-hashed, its log (?log= pages on), its metric curves, its GPU
// summary and a page of its entries (?after= pages on).
func (s *Server) run(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.URL.Query().Get("id")
	if id == "" {
		return badRequest("give the run: /run?id=RUN")
	}
	run, err := s.l.RunStatus(ctx, id)
	if err != nil {
		return err
	}
	b := runBody{Run: run, Duration: duration(run.StartedAt, run.EndedAt)}
	if b.Start, err = ledger.DecodeEntry[runner.StartBody](ctx, s.l, run.StartedSeq); err != nil {
		return err
	}
	b.Params, b.Env = sortedPairs(b.Start.Params), sortedPairs(b.Start.Env)
	if run.EndedSeq != nil {
		end, err := ledger.DecodeEntry[runner.EndBody](ctx, s.l, *run.EndedSeq)
		if err != nil {
			return err
		}
		b.End = &end
	}
	if b.Artifacts, err = s.artifacts(r, id); err != nil {
		return err
	}
	if err := s.runLog(r, id, &b); err != nil {
		return err
	}
	if err := s.runCurves(r, id, &b); err != nil {
		return err
	}
	for e, err := range s.l.Entries(ctx, ledger.Filter{Kind: records.KindGPUSamples, Run: id}) {
		if err != nil {
			return err
		}
		b.GPUSeqs = append(b.GPUSeqs, e.Seq)
	}
	if b.After, err = seqParam(r, "after"); err != nil {
		return err
	}
	for e, err := range s.l.Entries(ctx, ledger.Filter{Run: id, AfterSeq: b.After, Limit: PageSize + 1}) {
		if err != nil {
			return err
		}
		if len(b.Entries) == PageSize {
			b.Next = b.Entries[PageSize-1].Seq
			break
		}
		b.Entries = append(b.Entries, entryHead{Seq: e.Seq, Kind: e.Kind, At: e.At, Hash: e.Hash})
	}
	return s.render(w, r, "run", "Run "+id, b)
}

// artifacts reads the run's artifact entries, re-hashing the blobs each
// names.
func (s *Server) artifacts(r *http.Request, id string) ([]artifactView, error) {
	var out []artifactView
	for e, err := range s.l.Entries(r.Context(), ledger.Filter{Kind: records.KindArtifact, Run: id}) {
		if err != nil {
			return nil, err
		}
		var a artifactView
		if err := json.Unmarshal(e.Body, &a); err != nil {
			return nil, &ledger.Error{Op: "read artifact entry " + strconv.FormatInt(e.Seq, 10), Err: err, Hint: "rlgate verify finds what is wrong with the ledger"}
		}
		a.Seq, a.Blobs = e.Seq, s.checkBlobs(e.Blobs)
		out = append(out, a)
	}
	return out, nil
}

// runLog reads a page of the run's log: chunks after ?log=, up to
// logPageChunks of them and logPageBytes of text.
func (s *Server) runLog(r *http.Request, id string, b *runBody) error {
	after, err := seqParam(r, "log")
	if err != nil {
		return err
	}
	left := logPageBytes
	for e, err := range s.l.Entries(r.Context(), ledger.Filter{Kind: records.KindLog, Run: id, AfterSeq: after, Limit: logPageChunks + 1}) {
		if err != nil {
			return err
		}
		if left <= 0 || len(b.Log) == logPageChunks {
			b.LogNext = b.Log[len(b.Log)-1].Seq
			break
		}
		c, err := records.Decode[runner.LogChunk](e.Kind, e.Body)
		if err != nil {
			return err
		}
		v := logView{Seq: e.Seq, LogChunk: c}
		if len(e.Blobs) > 0 {
			v.Blob = s.checkBlob(e.Blobs[0])
			if v.Blob.Result == "ok" {
				text, err := s.readPrefix(e.Blobs[0], left)
				if err != nil {
					return err
				}
				v.Text, v.Cut = string(text), len(text) < c.Bytes
				left -= len(text)
			}
		}
		b.Log = append(b.Log, v)
	}
	return nil
}

// readPrefix reads at most n bytes of blob d.
func (s *Server) readPrefix(d ledger.Digest, n int) ([]byte, error) {
	rc, err := s.l.OpenBlob(d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, int64(n)))
}

// runCurves draws every metric key the run logged, as the report draws
// its training curves (reports.NewCurve, reports.CurveChart).
func (s *Server) runCurves(r *http.Request, id string, b *runBody) error {
	ctx := r.Context()
	keys, err := s.l.MetricKeys(ctx, id)
	if err != nil {
		return err
	}
	if len(keys) > maxCurves {
		keys, b.MoreKeys = keys[:maxCurves], len(keys)-maxCurves
	}
	head, err := s.l.Head(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		pts, seqs, err := s.l.Series(ctx, id, k)
		if err != nil {
			return err
		}
		c := reports.NewCurve(audit.LabeledRun{Label: k, Run: id}, k, &audit.Series{Key: k, Points: pts, Seqs: seqs}, head.Seq)
		if c == nil {
			continue
		}
		v := curveView{Curve: *c, Chart: reports.CurveChart(k, k, []reports.Curve{*c})}
		v.ShowSeqs = c.Seqs[:min(len(c.Seqs), maxCurveSeqs)]
		v.MoreSeqs = len(c.Seqs) - len(v.ShowSeqs)
		b.Curves = append(b.Curves, v)
	}
	return nil
}
