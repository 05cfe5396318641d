//go:build chromium

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/demo"
)

// TestUIComparisonChromium follows, in Debian's chromium, the path of a
// reader of the demo's ledger (rlgate demo, seed 1): the comparison of the
// verdict's evaluations, the filter "solved only by rl", a task's base and
// rl episodes side by side, a raw request, and back to the grading panel's
// outcomes entry. Each page must render
// its heading with no console error (a CSP violation is one), and is
// screenshotted into $RLGATE_SCREENSHOT_DIR when that is set.
func TestUIComparisonChromium(t *testing.T) {
	bin := chromiumBin(t)
	dir := filepath.Join(t.TempDir(), "demo")
	if _, err := demo.Run(context.Background(), demo.Options{Dir: dir, Seed: 1, Exe: demoExe(t)}); err != nil {
		t.Fatalf("demo: %v", err)
	}
	ts := uiServe(t, filepath.Join(dir, ledger.DefaultDir))
	ctx := chromium(t, bin)
	check := watchBrowser(t, ctx, func(u string) bool { return strings.HasPrefix(u, ts.URL+"/") })
	// step clicks the first element sel names (none: the page is opened
	// by address), waits for the next page and screenshots it.
	step := func(name, sel string, wantPath string) {
		t.Helper()
		if sel != "" {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
				t.Fatalf("%s: click %s: %v", name, sel, err)
			}
		}
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
			t.Fatal(err)
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil || !strings.HasPrefix(loc, ts.URL+wantPath) {
			t.Errorf("%s: at %q (%v), want %s", name, loc, err, wantPath)
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
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/compare")); err != nil {
		t.Fatal(err)
	}
	step("compare", "", "/compare")
	step("compare-rl-only", `#compare-pairs tr[data-label="rl"] td[data-fig="b"] a`, "/compare?gained=rl")
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#matrix-rows tr[data-task]").length`))
	if err != nil || rows == 0 {
		t.Fatalf("solved only by rl lists %d tasks (%v)", rows, err)
	}
	step("trajectories", `#matrix-rows tr[data-task] td:last-child a:nth-of-type(2)`, "/trajectory")
	sides, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll("section.side")).map(s => s.getBoundingClientRect().width)`))
	if err != nil || len(sides) != 2 || sides[0] < 300 || sides[1] < 300 {
		t.Errorf("sides %v (%v), want two side by side", sides, err)
	}
	episodes, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	step("raw-request", `section.side .turn-head a`, "/trajectory/raw")
	if err := chromedp.Do(ctx, chromedp.Navigate(episodes)); err != nil {
		t.Fatal(err)
	}
	step("grading-entry", `section.grading a.seq`, "/entry/")
	check()
}
