package ui

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/tasks"
)

const spiderDir = "../testdata/spider"

// evalTasks is how many Spider tasks the evaluations of evalLedger play.
const evalTasks = 24

// hostileSQL is the probe every episode runs: its result, column name
// and text hold markup, and its reasoning an escape sequence.
const hostileSQL = `SELECT '<script>alert("obs")</script>' AS "<b>col</b>"`

// evaluations are the evaluations evalLedger records, by label: which
// tasks (by gold index) each answers with its gold.
var evaluations = []struct {
	label  string
	solves func(i int) bool
}{
	{audit.LabelBase, func(i int) bool { return i%4 == 0 }},
	{audit.LabelRL, func(i int) bool { return i%5 != 1 }},
}

// spiderImport imports the Spider dev set under dir, as rlgate data
// import writes it.
func spiderImport(t *testing.T, dir string) string {
	t.Helper()
	im, err := dataset.ImportSpider(context.Background(), dataset.SpiderOptions{Dev: spiderDir + "/dev.json", Gold: spiderDir + "/dev_gold.sql",
		Tables: spiderDir + "/tables.json", DBRoot: spiderDir + "/database"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "spider")
	if err := im.WriteDir(out, false); err != nil {
		t.Fatal(err)
	}
	return out
}

// evalLedger plays and grades one rollout per evaluation of the first
// evalTasks Spider tasks, each episode a hostile probe then a solution,
// and returns the ledger and the evaluations (the grading runs).
func evalLedger(t *testing.T) (*ledger.Ledger, []audit.LabeledRun) {
	t.Helper()
	ctx := context.Background()
	dir := spiderImport(t, t.TempDir())
	ts, err := tasks.Read(filepath.Join(dir, dataset.TasksFile))
	if err != nil {
		t.Fatal(err)
	}
	golds, err := gold.Read(filepath.Join(dir, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	man, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gold.Gold{}
	for _, g := range golds {
		byID[g.ID] = g
	}
	l := ledgertest.New(t)
	g := grade.NewGrader(grade.Options{}, nil)
	defer g.Close()
	var runs []audit.LabeledRun
	for _, e := range evaluations {
		srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
			if r.Turn == 0 {
				return rollouttest.Reply{Content: "<think>Probe \x1b[31m<i>first</i>.</think>\n<sql>" + hostileSQL + "</sql>"}
			}
			sql := "SELECT '<b>wrong</b>'"
			if gd := byID[r.TaskID]; e.solves(gd.Index) {
				sql = gd.SQL
			}
			return rollouttest.Reply{Content: "<think>Answer.</think>\n<solution>" + sql + "</solution>"}
		})
		run := "roll-" + e.label
		_, err := rollout.Play(ctx, l, rollout.Options{Run: run, Tasks: ts[:evalTasks], TasksPath: filepath.Join(dir, dataset.TasksFile),
			TasksDigest: man.Tasks.Digest, DBPath: func(id string) string { return dataset.DBPath(man.DBRoot, id) }, Endpoint: srv.URL,
			Model: "model-" + e.label, Protocol: rollout.DefaultProtocol()})
		if err != nil {
			t.Fatal(err)
		}
		s, err := grade.GradeTrajectories(ctx, l, g, grade.TrajectoryOptions{Rollout: run, Dataset: dir, Metric: grade.MetricSpider, Mode: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, audit.LabeledRun{Label: e.label, Run: s.Run})
	}
	return l, runs
}

// runsQuery is the ?runs= of the evaluations.
func runsQuery(runs []audit.LabeledRun) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, r.Label+"="+r.Run)
	}
	return url.QueryEscape(strings.Join(parts, ","))
}

var (
	rowRE  = regexp.MustCompile(`(?s)<tr data-label="([^"]*)">(.*?)</tr>`)
	figRE  = regexp.MustCompile(`(?s)data-fig="([a-z]+)">(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
	taskRE = regexp.MustCompile(`<tr data-task="([^"]*)">`)
)

// pageFigures extracts the figures of the comparison page's tables: by
// label, by figure name, the text of the cell.
func pageFigures(page string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, row := range rowRE.FindAllStringSubmatch(page, -1) {
		if out[row[1]] == nil {
			out[row[1]] = map[string]string{}
		}
		for _, f := range figRE.FindAllStringSubmatch(row[2], -1) {
			out[row[1]][f[1]] = html.UnescapeString(strings.TrimSpace(tagRE.ReplaceAllString(f[2], "")))
		}
	}
	return out
}

// compareFigures is what the page must show of c: each figure formatted
// as rlgate compare prints it.
func compareFigures(c *audit.Comparison) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, m := range c.Models {
		out[m.Label] = map[string]string{"correct": fmt.Sprintf("%d/%d", m.Correct, m.N), "accuracy": fmt.Sprintf("%.4f", m.Accuracy),
			"wilson": fmt.Sprintf("[%.4f, %.4f]", m.Wilson.Lo, m.Wilson.Hi)}
	}
	for _, p := range c.Pairs {
		for k, v := range map[string]string{"delta": fmt.Sprintf("%+.4f", p.Delta),
			"bootstrap": fmt.Sprintf("[%+.4f, %+.4f]", p.Bootstrap.Percentile.Lo, p.Bootstrap.Percentile.Hi),
			"b":         fmt.Sprint(p.B), "c": fmt.Sprint(p.C), "p": fmt.Sprintf("%.4g", p.McNemar.ExactP), "holm": fmt.Sprintf("%.4g", p.HolmP),
			"mde": fmt.Sprintf("%.4f", p.MDE)} {
			out[p.Label][k] = v
		}
	}
	return out
}

// matrixTasks lists the task ids of every page of the matrix at path,
// following the pager.
func matrixTasks(t *testing.T, p pages, path string) []string {
	t.Helper()
	var ids []string
	for page := 1; ; page++ {
		status, body := p.get(fmt.Sprintf("%s&page=%d", path, page))
		if status != http.StatusOK {
			t.Fatalf("%s page %d: %d\n%s", path, page, status, body)
		}
		for _, m := range taskRE.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		if !strings.Contains(body, `rel="next"`) {
			return ids
		}
	}
}

// pages is a server of a ledger for the page tests.
type pages struct {
	t  *testing.T
	ts *httptest.Server
}

// get fetches path and returns the status and the body.
func (p pages) get(path string) (int, string) {
	p.t.Helper()
	resp, body := get(p.t, p.ts, http.MethodGet, path, nil)
	return resp.StatusCode, body
}

func TestComparisonPage(t *testing.T) {
	l, runs := evalLedger(t)
	ts := serve(t, l, Options{Loopback: true})
	p := pages{t, ts}
	c, err := audit.Compare(context.Background(), l, audit.CompareOptions{Runs: runs, Seed: 1, ByDifficulty: true})
	if err != nil {
		t.Fatal(err)
	}
	status, body := p.get("/compare?runs=" + runsQuery(runs))
	if status != http.StatusOK {
		t.Fatalf("compare page: %d\n%s", status, body)
	}
	if diff := cmp.Diff(compareFigures(c), pageFigures(body)); diff != "" {
		t.Errorf("page figures differ from compare's (-compare +page):\n%s", diff)
	}
	for _, seq := range c.OutcomeSeqs {
		if !strings.Contains(body, fmt.Sprintf(`href="/entry/%d"`, seq)) {
			t.Errorf("no link to outcomes entry %d", seq)
		}
	}
	// b and c list their tasks, page by page; so do the other filters.
	rl := c.Pairs[0]
	all := matrixTasks(t, p, "/compare?runs="+runsQuery(runs))
	if len(all) != c.Tasks {
		t.Errorf("the matrix lists %d tasks, compare paired %d", len(all), c.Tasks)
	}
	for filter, want := range map[string]int{"gained=rl": rl.B, "lost=rl": rl.C, "gained=base": 0, "fragile=1": 0, "unfinished=1": 0} {
		if got := matrixTasks(t, p, "/compare?runs="+runsQuery(runs)+"&"+filter); len(got) != want {
			t.Errorf("%s lists %d tasks, want %d", filter, len(got), want)
		}
	}
	for _, d := range c.ByDifficulty {
		got := matrixTasks(t, p, "/compare?runs="+runsQuery(runs)+"&difficulty="+d.Difficulty+"&gained=rl")
		if len(got) != d.Pairs[0].B {
			t.Errorf("%s: %d tasks solved only by rl, compare counts %d", d.Difficulty, len(got), d.Pairs[0].B)
		}
	}
	for _, bad := range []string{"/compare?runs=base", "/compare?runs=" + runsQuery(runs) + "&gained=ppo", "/compare?runs=" + runsQuery(runs) + "&page=0",
		"/compare?runs=base=nope,rl=" + runs[1].Run, "/compare"} {
		if status, _ := p.get(bad); status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, status)
		}
	}
}

func TestTrajectoryPage(t *testing.T) {
	l, runs := evalLedger(t)
	ts := serve(t, l, Options{Loopback: true})
	p := pages{t, ts}
	ctx := context.Background()
	// A task base answered wrong, with markup.
	recs, err := rollout.ReadRecorded(ctx, l, "roll-base")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(recs, func(r rollout.Recorded) bool { return strings.Contains(r.FinalSQL, "<b>wrong</b>") })
	if i < 0 {
		t.Fatal("base answered every task with its gold")
	}
	task := recs[i].TaskID
	tg, err := grade.ReadTaskGrading(ctx, l, runs[0].Run, task)
	if err != nil {
		t.Fatal(err)
	}
	status, body := p.get(trajectoryURL(task, runs[0].Run, runs[1].Run))
	if status != http.StatusOK {
		t.Fatalf("trajectory page: %d\n%s", status, body)
	}
	// Both sides, each with its grading panel, after its turns.
	if n := strings.Count(body, `<section class="side"`); n != 2 {
		t.Errorf("%d sides, want 2", n)
	}
	if n := strings.Count(body, `<section class="grading"`); n != 2 {
		t.Errorf("%d grading panels, want 2", n)
	}
	for _, side := range strings.Split(body, `<section class="side"`)[1:] {
		turns, grading, ok := strings.Cut(side, `<section class="grading"`)
		if !ok || strings.Contains(turns, "gold SQL") || !strings.Contains(grading, "gold SQL") {
			t.Errorf("the gold shows outside the grading panel:\n%s", side)
		}
	}
	// Hostile content is text: the observation's markup, the SQL, the
	// reasoning's escape sequence.
	for _, want := range []string{"&lt;script&gt;alert(&#34;obs&#34;)&lt;/script&gt;", "<th>&lt;b&gt;col&lt;/b&gt;</th>", "Probe \\x1b[31m&lt;i&gt;first&lt;/i&gt;.",
		"&lt;b&gt;wrong&lt;/b&gt;", escaped(tg.Gold.SQL)} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "<b>col", "<i>first", "\x1b"} {
		if strings.Contains(body, bad) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	// The figures are the episode's.
	v, err := rollout.ReadView(ctx, l, "roll-base", task, 0)
	if err != nil {
		t.Fatal(err)
	}
	side := strings.Split(body, `<section class="side"`)[1]
	for fig, want := range map[string]string{"turns": fmt.Sprint(v.Usage.Turns), "sql": fmt.Sprint(v.Usage.SQLExecutions),
		"tokens": fmt.Sprintf("%d / %d", v.Usage.TokensIn, v.Usage.TokensOut), "stop": string(v.StopReason), "verdict": string(tg.Item.Verdict)} {
		m := regexp.MustCompile(`data-fig="` + fig + `">([^<]*)<`).FindStringSubmatch(side)
		if m == nil || m[1] != want {
			t.Errorf("%s: page %q, episode %q", fig, m, want)
		}
	}

	// The raw bodies, one click away, byte for byte as text.
	req, err := rollout.ReadBody(ctx, l, "roll-base", task, 0, 0, rollout.PartRequest)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawURL(v, 0, rollout.PartRequest)
	if !strings.Contains(body, escaped(raw)) {
		t.Errorf("no link to %s", raw)
	}
	status, rawPage := p.get(raw)
	if status != http.StatusOK || !strings.Contains(rawPage, escaped(string(req))) {
		t.Errorf("raw request page: %d\n%s", status, rawPage)
	}
	// A rollout named directly shows its episode without a grading panel.
	if status, body := p.get(trajectoryURL(task, "roll-rl", "")); status != http.StatusOK || strings.Contains(body, `class="grading"`) || !strings.Contains(body, "model-rl") {
		t.Errorf("rollout page: %d", status)
	}
	for path, want := range map[string]int{
		"/trajectory?task=" + task:                         http.StatusBadRequest,
		trajectoryURL("no-such-task", runs[0].Run, ""):     http.StatusNotFound,
		trajectoryURL(task, "no-such-run", ""):             http.StatusNotFound,
		trajectoryURL(task, runs[0].Run, "") + "&sample=x": http.StatusBadRequest,
		strings.Replace(raw, "turn=0", "turn=9", 1):        http.StatusNotFound,
		strings.Replace(raw, "part=request", "part=x", 1):  http.StatusBadRequest,
	} {
		if status, _ := p.get(path); status != want {
			t.Errorf("%s: %d, want %d", path, status, want)
		}
	}
}

// escaped is s as html/template writes it in an element's text.
func escaped(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;")
	return r.Replace(s)
}
