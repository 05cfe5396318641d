//go:build chromium

package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUIChromium reads the pages of TestReport's experiment in Debian's
// chromium as a reader would: the runs, a training run with its curves,
// the verdicts, the passing verdict, then its first evidence link to the
// entry behind it, and the lineage. Each page must render its heading and
// every chart at a real size, log no console error (a CSP violation is
// one), fetch nothing but the server, and be screenshotted into
// $RLGATE_SCREENSHOT_DIR when that is set.
func TestUIChromium(t *testing.T) {
	bin := chromiumBin(t)
	x := buildReportExperiment(t)
	ts := uiServe(t, x.ledger)
	rep := reportJSON(t, reportWrite(t, x.ledger, "--format", "json", "--runs", x.runs, "--train", x.cleanTrain))
	ctx := chromium(t, bin)

	check := watchBrowser(t, ctx, func(u string) bool { return strings.HasPrefix(u, ts.URL+"/") })
	look := func(name string, charts int) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
			t.Fatal(err)
		}
		sizes, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]float64](`Array.from(document.querySelectorAll("main svg")).map(s => { const r = s.getBoundingClientRect(); return {w: r.width, h: r.height}; })`))
		if err != nil {
			t.Fatal(err)
		}
		if len(sizes) < charts {
			t.Errorf("%s: %d charts, want at least %d", name, len(sizes), charts)
		}
		for i, s := range sizes {
			if s["w"] < 100 || s["h"] < 40 {
				t.Errorf("%s: chart %d rendered %v×%v", name, i, s["w"], s["h"])
			}
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if d := os.Getenv("RLGATE_SCREENSHOT_DIR"); d != "" {
			if err := os.WriteFile(filepath.Join(d, "ui-"+name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	open := func(name, path string, charts int) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+path)); err != nil {
			t.Fatal(err)
		}
		look(name, charts)
	}
	train := rep.Subjects.Train[len(rep.Subjects.Train)-1].Run
	open("runs", "/runs", 0)
	open("run", "/run?id="+url.QueryEscape(train), 1)
	open("verdicts", "/verdicts", 0)
	open("verdict", "/verdict/"+strconv.FormatInt(rep.Verdict.Seq, 10), 0)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#checks a.seq")), chromedp.WaitVisible(chromedp.CSS("#body"))); err != nil {
		t.Fatal(err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.HasPrefix(loc, ts.URL+"/entry/") {
		t.Errorf("the evidence link led to %q (%v), want an entry", loc, err)
	}
	look("evidence", 0)
	open("lineage", "/lineage", 1)

	check()
}
