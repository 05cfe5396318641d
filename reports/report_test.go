package reports

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
)

var ctx = context.Background()

const spiderDir = "../testdata/spider"

// spiderImport is Spider dev imported once for the package's tests (the
// 972 questions with a database), removed by TestMain.
var spiderImport = sync.OnceValues(func() (string, error) {
	im, err := dataset.ImportSpider(ctx, dataset.SpiderOptions{Dev: spiderDir + "/dev.json", Gold: spiderDir + "/dev_gold.sql", DBRoot: spiderDir + "/database"})
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "rlgate-reports-")
	if err != nil {
		return "", err
	}
	return dir, im.WriteDir(filepath.Join(dir, "spider"), false)
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := spiderImport(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// experiment is a ledger holding three exact-match gradings of Spider dev
// through the real grader, labelled base, sft and rl: the DAIL-SQL
// predictions with every second (base) or fourth (sft) one replaced by a
// query that does not parse, and as they are (rl).
type experiment struct {
	l        *ledger.Ledger
	graded   map[string]*grade.FileSummary
	subjects audit.Subjects
}

func newExperiment(t *testing.T) *experiment {
	t.Helper()
	dir, err := spiderImport()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(spiderDir + "/predictions/dail-sql-gpt4.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	x := &experiment{l: ledgertest.New(t), graded: map[string]*grade.FileSummary{}}
	g := grade.NewGrader(grade.Options{}, nil)
	defer g.Close()
	for _, m := range []struct {
		label string
		every int // every-th prediction is spoiled; 0: none
	}{{audit.LabelBase, 2}, {audit.LabelSFT, 4}, {audit.LabelRL, 0}} {
		var b bytes.Buffer
		for i, line := range lines {
			if m.every > 0 && i%m.every == 1 {
				line = "SELECT"
			}
			b.WriteString(line + "\n")
		}
		path := filepath.Join(t.TempDir(), m.label+".txt")
		if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := grade.GradeFile(ctx, x.l, g, grade.FileOptions{Run: "em-" + m.label, Predictions: path, Format: grade.FormatSpiderTxt,
			Dataset: filepath.Join(dir, "spider"), Metric: grade.MetricSpiderEM})
		if err != nil {
			t.Fatal(err)
		}
		x.graded[m.label] = s
		x.subjects.Runs = append(x.subjects.Runs, audit.LabeledRun{Label: m.label, Run: s.Run})
	}
	return x
}

// policy claims rl > base and sft > base, with the budget audit, read
// from a policy file (2,000 resamples: the figures do not need more).
func (x *experiment) policy(t *testing.T) audit.Policy {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	text := "name: reports-test\nclaims: [\"rl > base\", \"sft > base\"]\naudits: [budget]\nalpha: 0.05\nresamples: 2000\nseed: 1\npower: 0.8\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := audit.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	p.Subjects = x.subjects
	return p
}

// TestBuildStatesTheGradings: without a verdict, a report of the three
// gradings states each model's accuracy as the grading counted it, over
// all tasks and per hardness, its paired counts against the baseline as
// the outcomes give them, every table citing the outcomes entries behind
// it, and states no gain: the headline names the claims unsupported and
// the Markdown heads differences "(unsupported)", with no Δ.
func TestBuildStatesTheGradings(t *testing.T) {
	x := newExperiment(t)
	p := x.policy(t)
	r, err := Build(ctx, x.l, Options{Subjects: x.subjects, Policy: &p})
	if err != nil {
		t.Fatal(err)
	}
	if r.Supported || r.Verdict != nil || len(r.Unsupported) != 2 || !strings.Contains(r.Headline, "unsupported") {
		t.Errorf("supported %v, verdict %v, unsupported %v, headline %q; want no verdict and both claims unsupported", r.Supported, r.Verdict, r.Unsupported, r.Headline)
	}
	correct := map[string]map[string]bool{} // label -> task -> correct
	for label, s := range x.graded {
		correct[label] = map[string]bool{}
		for _, it := range s.Items {
			correct[label][it.TaskID] = it.Correct
		}
	}
	var all *ModelTable
	levels := map[string]bool{}
	for i, tb := range r.Tables {
		if len(tb.Seqs) == 0 {
			t.Errorf("table %s %s cites no entries", tb.Group, tb.Value)
		}
		switch tb.Group {
		case "all":
			all = &r.Tables[i]
		case "difficulty":
			levels[tb.Value] = true
		}
	}
	if d := cmp.Diff(map[string]bool{"easy": true, "medium": true, "hard": true, "extra": true}, levels); d != "" {
		t.Errorf("hardness tables (-want +got):\n%s", d)
	}
	if all == nil || all.Tasks != 972 || len(all.Rows) != 3 {
		t.Fatalf("the table over all tasks: %+v", all)
	}
	for _, row := range all.Rows {
		s := x.graded[row.Label]
		if row.Correct != s.Correct || row.N != s.Total {
			t.Errorf("%s: %d/%d in the report, %d/%d graded", row.Label, row.Correct, row.N, s.Correct, s.Total)
		}
		if row.Label == audit.LabelBase {
			continue
		}
		b, c := 0, 0
		for task, ok := range correct[row.Label] {
			switch base := correct[audit.LabelBase][task]; {
			case ok && !base:
				b++
			case base && !ok:
				c++
			}
		}
		if row.Pair == nil || row.Pair.B != b || row.Pair.C != c {
			t.Errorf("%s against base: pair %+v, want b=%d c=%d", row.Label, row.Pair, b, c)
		}
	}
	files, err := r.Render()
	if err != nil {
		t.Fatal(err)
	}
	md := string(files[Files[FormatMarkdown]])
	if !strings.HasPrefix(md, r.Headline+"\n") || !strings.Contains(md, "(unsupported)") || strings.Contains(md, "Δ") {
		t.Errorf("an unsupported report's Markdown must open with the headline, head differences (unsupported) and show no Δ:\n%s", md[:min(len(md), 2000)])
	}
}

// TestBuildRestsOnTheVerdict: once the gate has decided on the runs, the
// report finds its verdict without being told the runs, and states the
// claims as the verdict decided them. Here the budget audit cannot run on
// gradings of prediction files (it needs rollouts), so the gate fails
// though both claims pass their tests: the report then supports neither,
// and lists the audit that failed.
func TestBuildRestsOnTheVerdict(t *testing.T) {
	x := newExperiment(t)
	v, err := audit.Gate(ctx, x.l, x.policy(t), audit.GateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.OK {
		t.Fatalf("the gate passed without a budget audit that can run: %+v", v.Checks)
	}
	r, err := Build(ctx, x.l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == nil || r.Verdict.Seq != v.Seq || r.Supported {
		t.Fatalf("report verdict %+v, supported %v; want the gate's failed verdict %d", r.Verdict, r.Supported, v.Seq)
	}
	if d := cmp.Diff(x.subjects, r.Subjects); d != "" {
		t.Errorf("subjects, found through the verdict (-gated +report):\n%s", d)
	}
	var got []string
	for _, c := range r.Claims {
		got = append(got, fmt.Sprintf("%s tested %v ok %v supported %v", c.Claim, c.Tested, c.OK, c.Supported))
	}
	want := []string{"rl > base tested true ok true supported false", "sft > base tested true ok true supported false"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("claims (-want +got):\n%s", d)
	}
	failed := false
	for _, a := range r.Audits {
		failed = failed || a.Name == "audit budget" && !a.OK
	}
	if !failed || !strings.Contains(r.Headline, "unsupported") {
		t.Errorf("audits %+v, headline %q; want the failed budget audit and the claims unsupported", r.Audits, r.Headline)
	}
}

// TestCheckFindsAnEditedReport: a report written and checked against the
// ledger agrees; a figure edited in its Markdown is a difference naming
// the file and line, with the report's and the ledger's lines.
func TestCheckFindsAnEditedReport(t *testing.T) {
	x := newExperiment(t)
	dir := t.TempDir()
	p := x.policy(t)
	if _, err := Write(ctx, x.l, Options{Subjects: x.subjects, Policy: &p}, dir); err != nil {
		t.Fatal(err)
	}
	res, err := Check(ctx, x.l, dir)
	if err != nil || !res.OK || len(res.Differences) != 0 {
		t.Fatalf("a report just written: ok %v, %+v, %v", res.OK, res.Differences, err)
	}
	path := filepath.Join(dir, Files[FormatMarkdown])
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The rl row of the model table, its correct count raised by 40.
	rl := x.graded[audit.LabelRL]
	lines := strings.Split(string(md), "\n")
	line, was := 0, ""
	for i, l := range lines {
		if strings.HasPrefix(l, "| rl ") && strings.Contains(l, "| "+rl.Run+" ") && strings.Contains(l, fmt.Sprintf(" %d ", rl.Correct)) {
			line, was = i+1, l
			lines[i] = strings.Replace(l, fmt.Sprintf(" %d ", rl.Correct), fmt.Sprintf(" %d ", rl.Correct+40), 1)
			break
		}
	}
	if line == 0 {
		t.Fatalf("no model row of rl with %d correct in:\n%s", rl.Correct, md)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Check(ctx, x.l, dir)
	if err != nil || res.OK || len(res.Differences) != 1 {
		t.Fatalf("an edited report: ok %v, %+v, %v; want one difference", res.OK, res.Differences, err)
	}
	d := res.Differences[0]
	if d.File != Files[FormatMarkdown] || d.Line != line || !strings.Contains(was, d.Ledger) {
		t.Errorf("difference %+v; want %s line %d, the ledger giving %s", d, Files[FormatMarkdown], line, was)
	}
}
