//go:build chromium

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestReportChromium looks at the HTML report of TestReport's experiment
// as a reader would: Debian's chromium, headless, loads the file, which
// must render its headline, its tables and every chart at a real size,
// log no console error or exception, fetch nothing but itself, and hold
// no script. The full-page screenshot is kept in $RLGATE_SCREENSHOT_DIR
// when that is set, for a person to look at.
func TestReportChromium(t *testing.T) {
	bin := chromiumBin(t)
	x := buildReportExperiment(t)
	for _, c := range []struct{ name, dir string }{
		{"failed", reportWrite(t, x.ledger)},
		{"passed", reportWrite(t, x.ledger, "--runs", x.runs, "--train", x.cleanTrain)},
	} {
		t.Run(c.name, func(t *testing.T) { reportLook(t, bin, filepath.Join(c.dir, "report.html"), c.name) })
	}
}

// chromiumBin finds Debian's chromium.
func chromiumBin(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: apt-get install -y chromium (the chromium build tag needs it)")
	return ""
}

// chromium starts Debian's chromium at bin, headless, with nothing of its
// own going to the network, for the test's lifetime (at most a minute).
func chromium(t *testing.T, bin string) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// watchBrowser records what the pages opened in ctx do that a reader does
// not see, and returns the check to run once they were looked at: no
// console error or warning, no exception (a CSP violation is one), and no
// request that fetch does not allow.
func watchBrowser(t *testing.T, ctx context.Context, fetch func(url string) bool) (check func()) {
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, "console "+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *network.EventRequestWillBeSent:
			if !fetch(e.Request.URL) {
				problems = append(problems, "fetched "+e.Request.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			t.Errorf("the pages: %v", problems)
		}
	}
}

func reportLook(t *testing.T, bin, page, name string) {
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(raw)), "<script") {
		t.Error("the page holds a script; it must read without JavaScript")
	}
	ctx := chromium(t, bin)

	url := "file://" + page
	check := watchBrowser(t, ctx, func(u string) bool { return u == url })

	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("p.headline"))); err != nil {
		t.Fatal(err)
	}
	headline, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("p.headline")))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table").length`))
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]float64](`Array.from(document.querySelectorAll("svg")).map(s => { const r = s.getBoundingClientRect(); return {w: r.width, h: r.height, marks: s.querySelectorAll("circle, rect, polyline, line").length}; })`))
	if err != nil {
		t.Fatal(err)
	}
	charts := len(sizes)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv("RLGATE_SCREENSHOT_DIR"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "report-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(png) < 10000 {
		t.Errorf("screenshot of %d bytes", len(png))
	}
	wantHead := map[string]string{"failed": "UNSUPPORTED:", "passed": "SUPPORTED:"}[name]
	if !strings.HasPrefix(headline, wantHead) {
		t.Errorf("headline %q, want it to start %q", headline, wantHead)
	}
	// Ledger, the gate verdicts for the model, claims, models, by
	// difficulty (Spider hardness), by database, audits, budget, training
	// curves, lineage.
	if tables != 10 {
		t.Errorf("%d tables rendered, want 10", tables)
	}
	// Accuracy, differences, and the reward, KL and lr curves.
	if charts != 5 {
		t.Errorf("%d charts rendered, want 5", charts)
	}
	for i, s := range sizes {
		if s["w"] < 100 || s["h"] < 60 || s["marks"] < 3 {
			t.Errorf("chart %d rendered %v×%v with %v marks", i, s["w"], s["h"], s["marks"])
		}
	}
	check()
}
