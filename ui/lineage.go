package ui

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/reports"
)

// Where the graph's boxes go (SVG units).
const (
	lineageColW  = 270
	lineageNodeW = 230
	lineageNodeH = 46
	lineageRowH  = 64
	lineagePad   = 10
)

// lineageNode is a box of the graph: a run, or a digest no run of the
// graph wrote (an imported dataset, a base checkpoint, a protocol).
type lineageNode struct {
	ID     string // the run id, or "digest D"
	Run    string
	Seq    int64 // the run's run.start, or the first entry reading the digest
	Title  string
	Sub    string
	Status records.Status
	Layer  int
	X, Y   int
}

// lineageEdge is what one node wrote (Out, its entry; 0 for a digest no
// run wrote) and another read (In, its entry), by digest.
type lineageEdge struct {
	From, To       string // node ids
	FromRun        string // the run From is, or "" for a digest
	Name           string
	Digest         ledger.Digest
	Out, In        int64
	X1, Y1, X2, Y2 int
}

// HasDigest tells an edge of a digest from a rollout's edge to its
// grading, which is of no one digest.
func (e lineageEdge) HasDigest() bool { return e.Digest != (ledger.Digest{}) }

// lineageBody is the lineage page.
type lineageBody struct {
	Of      string // what the graph shows, in words
	Verdict int64  // the verdict whose runs it shows
	Missing string // why there is no graph
	Nodes   []*lineageNode
	Edges   []lineageEdge
	W, H    int
	NodeW   int
	NodeH   int
}

// lineage draws the stage graph of an experiment: the runs of gate
// verdict ?verdict=SEQ, by default of the latest verdict, with the
// lineage rlgate report states for them (reports.Build): each training
// run's inputs and outputs, each evaluation's tasks, protocol, model and
// gold, by digest. An arrow joins a run that wrote a digest to a later
// run that read it (not a run that wrote back what it read, as the
// report rules), a rollout to its grading, and an input no run wrote to
// the runs that read it. Each box links to its run.
func (s *Server) lineage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	seq, err := seqParam(r, "verdict")
	if err != nil {
		return err
	}
	var b lineageBody
	var o reports.Options
	if seq > 0 {
		v, err := ledger.DecodeEntry[audit.Verdict](ctx, s.l, seq)
		if err != nil {
			return err
		}
		o.Subjects = v.Policy.Subjects
		b.Of = "the runs gate verdict " + strconv.FormatInt(seq, 10) + " judged"
	} else {
		b.Of = "the runs of the latest gate verdict"
	}
	rep, err := reports.Build(ctx, s.l, o)
	if err != nil {
		b.Missing = err.Error()
		return s.render(w, r, "lineage", "Lineage", b)
	}
	if rep.Verdict != nil {
		b.Verdict = rep.Verdict.Seq
	}
	if err := s.lineageGraph(ctx, rep, &b); err != nil {
		return err
	}
	layout(&b)
	return s.render(w, r, "lineage", "Lineage", b)
}

// lineageGraph turns the report's lineage rows and budget rows into
// nodes and edges.
func (s *Server) lineageGraph(ctx context.Context, rep *reports.Report, b *lineageBody) error {
	nodes := map[string]*lineageNode{}
	runNode := func(run string) error {
		if nodes[run] != nil {
			return nil
		}
		st, err := s.l.RunStatus(ctx, run)
		if err != nil {
			return err
		}
		nodes[run] = &lineageNode{ID: run, Run: run, Seq: st.StartedSeq, Title: st.Stage, Sub: run, Status: st.Status}
		b.Nodes = append(b.Nodes, nodes[run])
		return nil
	}
	type key struct {
		run string
		d   ledger.Digest
	}
	read := map[key]bool{}
	for _, x := range rep.Lineage {
		if err := runNode(x.Run); err != nil {
			return err
		}
		if x.Role == records.RoleInput {
			read[key{x.Run, x.Digest}] = true
		}
	}
	seen := map[[3]string]bool{}
	edge := func(e lineageEdge) {
		k := [3]string{e.From, e.To, e.Name + " " + e.Digest.String()}
		if !seen[k] {
			seen[k] = true
			b.Edges = append(b.Edges, e)
		}
	}
	for _, in := range rep.Lineage {
		if in.Role != records.RoleInput {
			continue
		}
		var from *reports.LineageRow
		for i, out := range rep.Lineage {
			if out.Role == records.RoleOutput && out.Digest == in.Digest && out.Run != in.Run && out.Seq < in.Seq && !read[key{out.Run, out.Digest}] {
				from = &rep.Lineage[i]
			}
		}
		if from != nil {
			edge(lineageEdge{From: from.Run, To: in.Run, Name: in.Name, Digest: in.Digest, Out: from.Seq, In: in.Seq})
			continue
		}
		id := "digest " + in.Digest.String()
		if n := nodes[id]; n == nil {
			nodes[id] = &lineageNode{ID: id, Seq: in.Seq, Title: in.Name, Sub: in.Digest.String()}
			b.Nodes = append(b.Nodes, nodes[id])
		} else if !slices.Contains(strings.Split(n.Title, ", "), in.Name) {
			n.Title += ", " + in.Name // read under several names: a base checkpoint is also a model's identity
		}
		edge(lineageEdge{From: id, To: in.Run, Name: in.Name, Digest: in.Digest, In: in.Seq})
	}
	for _, bu := range rep.Budget {
		if err := runNode(bu.Run); err != nil {
			return err
		}
		if err := runNode(bu.Rollout); err != nil {
			return err
		}
		edge(lineageEdge{From: bu.Rollout, To: bu.Run, Name: "trajectories", Out: nodes[bu.Rollout].Seq, In: nodes[bu.Run].Seq})
	}
	return nil
}

// layout places each node in the column of its longest path from a node
// nothing feeds, orders each column so that arrows cross little (each
// run below the mean row of what feeds it, then each source beside the
// mean row of what it feeds, then the runs again), and draws each edge
// between its boxes.
func layout(b *lineageBody) {
	byID := map[string]*lineageNode{}
	for _, n := range b.Nodes {
		byID[n.ID] = n
	}
	// Edges run from an earlier entry to a later one, so no cycle: at
	// most one pass per node settles every layer.
	for range b.Nodes {
		moved := false
		for _, e := range b.Edges {
			if f, t := byID[e.From], byID[e.To]; t.Layer < f.Layer+1 {
				t.Layer, moved = f.Layer+1, true
			}
		}
		if !moved {
			break
		}
	}
	slices.SortStableFunc(b.Nodes, func(x, y *lineageNode) int { return cmp.Or(x.Layer-y.Layer, cmp.Compare(x.Seq, y.Seq)) })
	row := map[string]float64{}
	number := func() {
		n := map[int]int{}
		for _, x := range b.Nodes {
			row[x.ID] = float64(n[x.Layer])
			n[x.Layer]++
		}
	}
	// order sorts the nodes of the layers sel picks by the mean row of
	// their neighbours on the side from (true: what feeds them).
	order := func(sel func(layer int) bool, from bool) {
		key := map[string]float64{}
		for _, x := range b.Nodes {
			sum, n := 0.0, 0
			for _, e := range b.Edges {
				if from && e.To == x.ID {
					sum, n = sum+row[e.From], n+1
				} else if !from && e.From == x.ID {
					sum, n = sum+row[e.To], n+1
				}
			}
			key[x.ID] = row[x.ID]
			if n > 0 && sel(x.Layer) {
				key[x.ID] = sum / float64(n)
			}
		}
		slices.SortStableFunc(b.Nodes, func(x, y *lineageNode) int { return cmp.Or(x.Layer-y.Layer, cmp.Compare(key[x.ID], key[y.ID])) })
		number()
	}
	number()
	later, first := func(l int) bool { return l > 0 }, func(l int) bool { return l == 0 }
	order(later, true)
	order(first, false)
	order(later, true)
	b.NodeW, b.NodeH = lineageNodeW, lineageNodeH
	for _, n := range b.Nodes {
		n.X, n.Y = lineagePad+n.Layer*lineageColW, lineagePad+int(row[n.ID])*lineageRowH
		b.W, b.H = max(b.W, n.X+lineageNodeW+lineagePad), max(b.H, n.Y+lineageNodeH+lineagePad)
	}
	for i := range b.Edges {
		e := &b.Edges[i]
		f, t := byID[e.From], byID[e.To]
		e.X1, e.Y1, e.X2, e.Y2 = f.X+lineageNodeW, f.Y+lineageNodeH/2, t.X, t.Y+lineageNodeH/2
		e.FromRun = f.Run
	}
}
