package main

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/records"
)

// TestUIEscapes: what a ledger holds is shown as text on every page: a
// run id and a stage with markup and control characters (written into
// ledger.db, as a ledger from a CI artifact may hold them), a command and
// a log holding HTML, and a gate policy named with a script and ESC.
func TestUIEscapes(t *testing.T) {
	t.Parallel()
	const (
		markupRun = "<script>alert(1)</script>"
		evilLog   = `<b>bold</b><img src=x onerror=alert(2)>`
	)
	dir := ledgerWithRuns(t)
	if code, _, errOut := rlgate(t, "--ledger", dir, "run", "--stage", "sft", "--run", markupRun, "--gpu", "off", "--",
		"sh", "-c", `printf '%s\033[2J\n' '`+evilLog+`'`); code != exitOK {
		t.Fatal(errOut)
	}
	hostile := markupRun + "\x1b]0;pwned\a"
	attackExec(t, dir, "UPDATE entries SET run = "+sqlString(hostile)+" WHERE run = "+sqlString(markupRun))
	attackExec(t, dir, "UPDATE runs SET run = "+sqlString(hostile)+", stage = "+sqlString(evilStage)+" WHERE run = "+sqlString(markupRun))

	x := buildReportExperiment(t).fork(t)
	verdict := lastVerdictSeq(t, x.ledger)
	attackExec(t, x.ledger, `UPDATE entries SET body = replace(body, '"name":"paper-grade"', '"name":"<script>alert(3)</script>\u001b[2J"') WHERE kind = '`+records.KindVerdict+`'`)

	ts := uiServe(t, dir)
	pages := map[string]string{}
	for _, p := range []string{"/runs", "/run?id=" + url.QueryEscape(hostile), "/entry/2", "/entry/3", "/lineage"} {
		pages[p] = uiGet(t, ts, p)
	}
	vs := uiServe(t, x.ledger)
	for _, p := range []string{"/verdicts", "/verdict/" + verdict} {
		pages["verdicts "+p] = uiGet(t, vs, p)
	}
	for p, page := range pages {
		assertPrintable(t, p, page)
		for _, raw := range []string{"<script>", "<b>bold", "<img", "alert(1)</script>"} {
			if strings.Contains(page, raw) {
				t.Errorf("%s: holds %q as markup", p, raw)
			}
		}
	}
	for p, want := range map[string][]string{
		"/runs":                               {`&lt;script&gt;alert(1)&lt;/script&gt;\x1b]0;pwned\a`, shownStg},
		"/run?id=" + url.QueryEscape(hostile): {`&lt;b&gt;bold&lt;/b&gt;&lt;img src=x onerror=alert(2)&gt;\x1b[2J`},
		"/entry/2":                            {`&lt;script&gt;alert(1)&lt;/script&gt;\x1b]0;pwned\a`, `&lt;img src=x onerror=alert(2)&gt;`},
		"verdicts /verdicts":                  {`&lt;script&gt;alert(3)&lt;/script&gt;\x1b[2J`},
	} {
		for _, w := range want {
			if !strings.Contains(pages[p], w) {
				t.Errorf("%s: does not show %q", p, w)
			}
		}
	}
	// The edited verdict no longer re-derives: its page says so.
	if v := pages["verdicts /verdict/"+verdict]; !strings.Contains(v, `id="refused"`) {
		t.Errorf("the edited verdict is not shown refused")
	}
}

// lastVerdictSeq is the seq of the ledger's last gate verdict.
func lastVerdictSeq(t *testing.T, ldir string) string {
	t.Helper()
	es := gateLog(t, ldir, "", records.KindVerdict)
	if len(es) == 0 {
		t.Fatal("no gate verdict")
	}
	return strconv.FormatInt(es[len(es)-1].Seq, 10)
}
