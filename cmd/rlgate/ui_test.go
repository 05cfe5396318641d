package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
	"github.com/rlgate/rlgate/ui"
	"github.com/rlgate/rlgate/workflow/ledgers"
)

// uiServe serves the ledger at loc (a directory or a postgres:// URL),
// opened read-only as rlgate ui opens it, on a loopback test server.
func uiServe(t *testing.T, loc string) *httptest.Server {
	t.Helper()
	l, err := ledger.OpenReadOnly(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s, err := ui.New(l, ui.Options{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// uiGet fetches path and fails unless it answers 200.
func uiGet(t *testing.T, ts *httptest.Server, path string) string {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d: %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// uiCell is a table cell of a page: its text and the links in it.
type uiCell struct {
	Text  string
	Links []string
}

// seqs are the entry seqs the cell links to.
func (c uiCell) seqs() []int64 {
	var out []int64
	for _, l := range c.Links {
		if s, ok := strings.CutPrefix(l, "/entry/"); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// uiTable reads the body rows of the table with the given id, as a
// browser would: the page is parsed as HTML, entities decoded.
func uiTable(t *testing.T, page, id string) [][]uiCell {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	var rows [][]uiCell
	in, found := false, false
	var cell *uiCell
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("table %s: %v", id, err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			attr := func(name string) string {
				for _, a := range x.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch {
			case x.Name.Local == "table" && attr("id") == id:
				in, found = true, true
			case !in:
			case x.Name.Local == "tr":
				rows = append(rows, nil)
			case x.Name.Local == "td" && len(rows) > 0:
				rows[len(rows)-1] = append(rows[len(rows)-1], uiCell{})
				cell = &rows[len(rows)-1][len(rows[len(rows)-1])-1]
			case x.Name.Local == "a" && cell != nil:
				cell.Links = append(cell.Links, attr("href"))
			}
		case xml.EndElement:
			switch {
			case !in:
			case x.Name.Local == "table":
				in = false
			case x.Name.Local == "td":
				cell = nil
			}
		case xml.CharData:
			if cell != nil {
				cell.Text += string(x)
			}
		}
	}
	if !found {
		t.Fatalf("the page has no table %s", id)
	}
	return slices.DeleteFunc(rows, func(r []uiCell) bool { return len(r) == 0 }) // header rows
}

// uiClaim is a claim's figures as the verdict page and report.md show
// them.
type uiClaim struct {
	Claim, Result                 string
	Tasks, B, C                   int
	Delta, CI, ExactP, HolmP, MDE string
	Comparison                    []int64
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUI serves TestReport's experiment and holds each page's figures to
// what rlgate report --format json, runs --json, show --json and compare
// --json state on the same ledger.
func TestUI(t *testing.T) {
	t.Parallel()
	x := buildReportExperiment(t)
	uiPages(t, x, x.ledger)
}

// uiPages checks the pages of x's ledger, at loc (a directory, or a
// PostgreSQL copy), against the commands run on loc.
func uiPages(t *testing.T, x *reportExperiment, loc string) {
	ts := uiServe(t, loc)
	passed := reportJSON(t, reportWrite(t, loc, "--format", "json", "--runs", x.runs, "--train", x.cleanTrain))
	t.Run("verdict-failed", func(t *testing.T) { uiVerdict(t, ts, reportJSON(t, reportWrite(t, loc, "--format", "json"))) })
	t.Run("verdict-passed", func(t *testing.T) { uiVerdict(t, ts, passed) })
	t.Run("runs", func(t *testing.T) { uiRuns(t, ts, loc) })
	t.Run("run", func(t *testing.T) { uiRun(t, ts, passed) })
	t.Run("lineage", func(t *testing.T) { uiLineage(t, ts, passed) })
	t.Run("entry", func(t *testing.T) { uiEntry(t, ts, loc) })
	t.Run("compare", func(t *testing.T) { uiCompare(t, ts, loc, x.runs) })
}

// uiVerdict: the verdict page shows the checks and claims of the verdict
// the report rests on, figure for figure, each with its evidence.
func uiVerdict(t *testing.T, ts *httptest.Server, rep reports.Report) {
	page := uiGet(t, ts, "/verdict/"+strconv.FormatInt(rep.Verdict.Seq, 10))
	var checks []audit.GateCheck
	failed := 0
	for _, row := range uiTable(t, page, "checks") {
		c := audit.GateCheck{Name: row[0].Text, OK: row[1].Text == "PASS", Message: row[2].Text, Seqs: row[3].seqs()}
		if !c.OK {
			failed++
		}
		if strings.HasPrefix(c.Name, "audit ") {
			checks = append(checks, c)
		}
	}
	if diff := cmp.Diff(rep.Audits, checks, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("audit checks: page differs from report.json (-report +page):\n%s", diff)
	}
	if failed != rep.Verdict.Failed || !strings.Contains(page, `<span id="failed">`+strconv.Itoa(rep.Verdict.Failed)+`</span> of <span id="checks-count">`+strconv.Itoa(rep.Verdict.Checks)+`</span>`) {
		t.Errorf("failed checks: page %d, report %d of %d", failed, rep.Verdict.Failed, rep.Verdict.Checks)
	}
	var got, want []uiClaim
	for _, row := range uiTable(t, page, "claims") {
		got = append(got, uiClaim{Claim: row[0].Text, Result: row[2].Text, Tasks: atoi(t, row[3].Text), B: atoi(t, row[4].Text), C: atoi(t, row[5].Text),
			Delta: row[6].Text, CI: row[7].Text, ExactP: row[8].Text, HolmP: row[9].Text, MDE: row[10].Text, Comparison: row[11].seqs()})
	}
	for _, c := range rep.Claims {
		w := uiClaim{Claim: c.Claim, Result: map[bool]string{true: "pass", false: "fail"}[c.OK], Tasks: c.Tasks, B: c.B, C: c.C,
			Delta: reports.Signed(c.Delta), CI: reports.SignedInterval(c.CI), ExactP: reports.PValue(c.ExactP), HolmP: reports.PValue(c.HolmP), MDE: reports.Value(c.MDE)}
		if c.Seq != 0 {
			w.Comparison = []int64{c.Seq}
		}
		want = append(want, w)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("claims: page differs from report.json (-report +page):\n%s", diff)
	}
	// Every entry the page cites opens.
	for _, row := range uiTable(t, page, "checks") {
		for _, s := range row[3].seqs() {
			uiGet(t, ts, "/entry/"+strconv.FormatInt(s, 10))
		}
	}
}

// uiRuns: the runs page lists what rlgate runs --json does, a page at a
// time, and its filters select what they name.
func uiRuns(t *testing.T, ts *httptest.Server, ldir string) {
	code, out, errOut := rlgate(t, "--ledger", ldir, "runs", "--json")
	if code != exitOK {
		t.Fatal(errOut)
	}
	var all []ledgers.RunRow
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Run, Stage, Status, Reason string
		Started, Ended             []int64
	}
	var want []row
	for _, r := range all {
		w := row{Run: r.Run.Run, Stage: r.Stage, Status: string(r.Status), Reason: r.Reason, Started: []int64{r.StartedSeq}}
		if r.EndedSeq != nil {
			w.Ended = []int64{*r.EndedSeq}
		}
		want = append(want, w)
	}
	read := func(q url.Values) []row {
		var got []row
		for p := 1; ; p++ {
			q.Set("page", strconv.Itoa(p))
			page := uiGet(t, ts, "/runs?"+q.Encode())
			rows := uiTable(t, page, "runs")
			if len(rows) == 1 && len(rows[0]) == 1 { // "no runs"
				return got
			}
			for _, c := range rows {
				got = append(got, row{Run: c[0].Text, Stage: c[1].Text, Status: c[2].Text, Started: c[4].seqs(), Ended: c[6].seqs(), Reason: c[8].Text})
			}
			if !strings.Contains(page, `rel="next"`) {
				return got
			}
		}
	}
	if diff := cmp.Diff(want, read(url.Values{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("runs page differs from rlgate runs --json (-runs +page):\n%s", diff)
	}
	if len(want) <= ui.PageSize {
		t.Logf("%d runs: one page", len(want))
	}
	stage := want[len(want)-1].Stage
	sel := slices.DeleteFunc(slices.Clone(want), func(r row) bool { return r.Stage != stage || r.Status != "ok" })
	if diff := cmp.Diff(sel, read(url.Values{"stage": {stage}, "status": {"ok"}}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("runs of stage %s that ended ok (-runs +page):\n%s", stage, diff)
	}
}

// uiRun: a training run's page lists the artifacts the report's lineage
// states, each blob re-hashed, and the curves the report draws.
func uiRun(t *testing.T, ts *httptest.Server, rep reports.Report) {
	train := rep.Subjects.Train[len(rep.Subjects.Train)-1].Run
	page := uiGet(t, ts, "/run?id="+url.QueryEscape(train))
	type art struct {
		Seq        []int64
		Role, Name string
		Digest     string
	}
	var got, want []art
	for _, c := range uiTable(t, page, "artifacts") {
		got = append(got, art{Seq: c[0].seqs(), Role: c[1].Text, Name: c[3].Text, Digest: c[4].Text})
		if !strings.Contains(c[6].Text, " ok") || strings.Contains(c[6].Text, "corrupt") || strings.Contains(c[6].Text, "missing") {
			t.Errorf("artifact %s: blobs %q, want each ok", c[3].Text, c[6].Text)
		}
	}
	for _, l := range rep.Lineage {
		if l.Run == train {
			want = append(want, art{Seq: []int64{l.Seq}, Role: string(l.Role), Name: l.Name, Digest: strings.TrimPrefix(l.Digest.String(), "blake3:")[:12]})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run %s: artifacts differ from the report's lineage (-report +page):\n%s", train, diff)
	}
	for _, c := range rep.Curves {
		if c.Run != train {
			continue
		}
		line := c.Key + ": " + strconv.Itoa(c.Steps) + " points, first " + strconv.FormatFloat(c.First, 'g', -1, 64) + ", last " + strconv.FormatFloat(c.Last, 'g', -1, 64)
		if !strings.Contains(page, line) {
			t.Errorf("run %s: the page does not state the report's curve %q", train, line)
		}
		if !strings.Contains(page, `aria-label="`+c.Key+`"`) {
			t.Errorf("run %s: no chart of %s", train, c.Key)
		}
	}
}

// uiLineage: the lineage of the passing verdict joins each evaluation's
// rollout to the training run that wrote the checkpoint it served, and to
// its grading, as the report's lineage and budget rows say; the control
// that wrote back its base checkpoint produced nothing.
func uiLineage(t *testing.T, ts *httptest.Server, rep reports.Report) {
	page := uiGet(t, ts, "/lineage?verdict="+strconv.FormatInt(rep.Verdict.Seq, 10))
	type edge struct{ From, To, What string }
	var got []edge
	for _, c := range uiTable(t, page, "edges") {
		got = append(got, edge{c[0].Text, c[2].Text, c[4].Text})
	}
	var want []edge
	for _, b := range rep.Budget {
		want = append(want, edge{b.Rollout, b.Run, "trajectories"})
		if b.Label != audit.LabelBase && b.Label != audit.LabelNoUpdate {
			want = append(want, edge{"train-" + b.Label, b.Rollout, "model_identity"})
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("lineage: no edge %+v among %+v", w, got)
		}
	}
	for _, e := range got {
		if e.From == "train-noupdate" {
			t.Errorf("lineage: %+v: the control wrote back the checkpoint it read, and produced nothing", e)
		}
	}
	for _, r := range slices.Concat(rep.Subjects.Train, rep.Subjects.Runs) {
		if !strings.Contains(page, `href="/run?id=`+url.QueryEscape(r.Run)+`"`) {
			t.Errorf("lineage: no box linking to run %s", r.Run)
		}
	}
}

// uiEntry: an entry's page by seq and by hash prefix shows the same
// entry, with its previous hash linked, as rlgate show --json does.
func uiEntry(t *testing.T, ts *httptest.Server, ldir string) {
	code, out, errOut := rlgate(t, "--ledger", ldir, "show", "5", "--json")
	if code != exitOK {
		t.Fatal(errOut)
	}
	var e ledger.Entry
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(e.Hash.String(), "blake3:")
	bySeq, byHash := uiGet(t, ts, "/entry/5"), uiGet(t, ts, "/entry/"+hex[:10])
	if bySeq != byHash {
		t.Error("/entry/5 and /entry/HASH differ")
	}
	for _, w := range []string{"<code>" + e.Hash.String() + "</code>", `href="/entry/` + e.Prev.String() + `"`, `href="/entry/4"`} {
		if !strings.Contains(bySeq, w) {
			t.Errorf("entry 5: no %q", w)
		}
	}
	var canon bytes.Buffer
	if err := json.Compact(&canon, e.Body); err != nil {
		t.Fatal(err)
	}
	if raw := uiGet(t, ts, "/entry/5/body"); raw != canon.String() {
		t.Errorf("entry 5 body: %q, want %q", raw, canon.String())
	}
}
