package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/reports"
)

func init() {
	// Other golden tests of this package may define -update too.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

// reportUpdate tells whether the golden files are to be rewritten.
func reportUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// reportExperiment is TestGate's experiment with two verdicts: one that
// passed for the clean runs, then one that failed, for the same
// evaluations with an rl training run that logged lr = 0.
type reportExperiment struct {
	*gateExperiment
	cleanTrain string          // --train of the passing verdict
	ungated    *gateExperiment // a fork taken before any gate ran
}

// The report and UI tests read it, so the test binary builds it once, in
// a directory that outlives the test that built it (buildGateExperiment),
// and hands each caller forks.
var (
	reportOnce     sync.Once
	reportTemplate *reportExperiment
)

// buildReportExperiment returns forks of the experiment, built on the
// first call.
func buildReportExperiment(t *testing.T) *reportExperiment {
	t.Helper()
	clean := buildGateExperiment(t)
	reportOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rlgate-report-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		atBinaryEnd(func() { os.RemoveAll(dir) })
		reportTemplate = reportBuild(t, clean, dir)
	})
	if reportTemplate == nil {
		t.Fatal("the report experiment failed to build in an earlier test; see its failure")
	}
	return &reportExperiment{gateExperiment: reportTemplate.fork(t), cleanTrain: reportTemplate.cleanTrain, ungated: reportTemplate.ungated.fork(t)}
}

// reportBuild gates a fork of the clean experiment under dir, adds the
// lr = 0 training run and gates again.
func reportBuild(t *testing.T, clean *gateExperiment, dir string) *reportExperiment {
	t.Helper()
	x := &reportExperiment{gateExperiment: clean.forkIn(t, filepath.Join(dir, "gated")), ungated: clean.forkIn(t, filepath.Join(dir, "ungated"))}
	x.cleanTrain = x.train
	if code, v := x.gate(t); code != exitOK || !v.OK {
		t.Fatalf("clean gate: exit %d, failed %v", code, failedChecks(v))
	}
	x.trainRun(t, "rl", "train-rl-lr0", x.written["rl"], "0", 0.25, "--param", "lr=1e-6")
	if code, v := x.gate(t); code != exitCheckFailed || v.OK {
		t.Fatalf("lr=0 gate: exit %d, failed %v", code, failedChecks(v))
	}
	return x
}

// reportJSON reads the report.json of a written report.
func reportJSON(t *testing.T, dir string) reports.Report {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reports.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// reportWrite runs rlgate report --out into a new directory.
func reportWrite(t *testing.T, ldir string, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report")
	if code, stdout, errOut := rlgate(t, append([]string{"--ledger", ldir, "report", "--out", out}, extra...)...); code != exitOK {
		t.Fatalf("report: exit %d:\n%s%s", code, stdout, errOut)
	}
	return out
}

// reportNormalise replaces what differs between two builds of the same
// experiment (the ledger id, entry hashes, which cover the time of each
// entry, and temporary paths) by placeholders.
//
// The imported training datasets record the absolute database root they
// were imported from, so their digests depend on where the repository is
// checked out; each is replaced by the name of its directory, after
// checking that it is the digest of that directory as it is now.
func reportNormalise(t *testing.T, x *reportExperiment, dir string, b []byte) []byte {
	t.Helper()
	r := reportJSON(t, dir)
	s := strings.ReplaceAll(string(b), r.Head.LedgerID, "LEDGER-ID")
	s = strings.ReplaceAll(s, r.Head.Hash.String(), "HEAD-HASH")
	s = strings.ReplaceAll(s, r.Head.Hash.Hex(), "HEAD-HASH")
	if r.Verdict != nil {
		s = strings.ReplaceAll(s, r.Verdict.DecidedOn.Hash.String(), "VERDICT-HEAD-HASH")
	}
	for _, v := range r.Verdicts {
		s = strings.ReplaceAll(s, v.DecidedOn.Hash.String(), fmt.Sprintf("HEAD-HASH-OF-%d", v.DecidedOn.Seq))
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	s = strings.ReplaceAll(s, repo, "REPO")
	for _, data := range x.trainData {
		m, err := manifests.HashTree(t.Context(), data)
		if err != nil {
			t.Fatal(err)
		}
		s = strings.ReplaceAll(s, m.Digest.String(), "DIGEST-OF-"+filepath.Base(data))
	}
	s = reportTempPath.ReplaceAllString(s, "TMP")
	// Table columns are padded to their widest cell, which a temporary
	// path widens or narrows.
	s = reportSpaces.ReplaceAllString(s, " |")
	return []byte(reportDashes.ReplaceAllString(s, "---|"))
}

var (
	reportTempPath = regexp.MustCompile(`/tmp/[^\s"|,)]*`)
	reportSpaces   = regexp.MustCompile(` {2,}\|`)
	reportDashes   = regexp.MustCompile(`-{3,}\|`)
)

// reportGolden compares a written report's Markdown and JSON with the
// golden files under testdata/report/NAME, rewriting them with -update.
func reportGolden(t *testing.T, x *reportExperiment, dir, name string) {
	t.Helper()
	for _, f := range []string{"report.md", "report.json"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got = reportNormalise(t, x, dir, got)
		golden := filepath.Join("testdata", "report", name, f)
		if reportUpdate() {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -run TestReport -update to write it)", err)
		}
		if f == "report.json" {
			var w, g any
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("%s %s (-golden +got):\n%s", name, f, diff)
			}
			continue
		}
		if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
			t.Errorf("%s %s (-golden +got):\n%s", name, f, diff)
		}
	}
}

// TestReport writes the reports of a passed and of a failed gate over one
// experiment built through the real commands, compares them with golden
// files, and checks each against the ledger.
func TestReport(t *testing.T) {
	t.Parallel()
	x := buildReportExperiment(t)
	passed := reportWrite(t, x.ledger, "--runs", x.runs, "--train", x.cleanTrain)
	failed := reportWrite(t, x.ledger) // the latest verdict: failed
	reportGolden(t, x, passed, "passed")
	reportGolden(t, x, failed, "failed")
	for _, dir := range []string{passed, failed} {
		if code, out, errOut := rlgate(t, "--ledger", x.ledger, "report", "--check", dir); code != exitOK {
			t.Errorf("check %s: exit %d:\n%s%s", dir, code, out, errOut)
		}
	}
	t.Run("a failed gate states no gain", func(t *testing.T) { reportNoGain(t, failed) })
	t.Run("without a verdict nothing is supported", func(t *testing.T) { reportUngated(t, x) })
	t.Run("check finds every edit", func(t *testing.T) { reportCheckEdits(t, x, failed) })
	t.Run("ledger strings are text in report.md", func(t *testing.T) { reportEscapes(t, x) })
	t.Run("every training stage in lineage and curves", func(t *testing.T) { reportCurriculum(t, x.ungated.fork(t)) })
}
