package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
)

// TestGateWire: the audits read what the ledger records of failures (a
// rollout's unfinished episodes, a grading of an incomplete rollout, the
// databases and SQLite a grading used, a stage's metrics findings and exit
// code) and fail the gate on them, citing the entries that record them.
// Each case forks the clean experiment of TestGate and adds its fault
// through the real commands.
func TestGateWire(t *testing.T) {
	clean := buildGateExperiment(t)
	tests := []gateFault{
		{
			name: "the rl rollout met transport failures and was graded --allow-incomplete",
			fault: func(t *testing.T, x *gateExperiment) []string {
				x.endpoint, _ = gateWireFlaky(t, x)
				x.evalRun(t, "rl", "ev-rl-flaky", x.data, x.identity["rl"], "--allow-incomplete", "--max-attempts", "1")
				return []string{"rl: grading ev-rl-flaky.spider-greedy counted 4 of 40 episodes wrong"}
			},
			failed: []string{"audit budget: same-episodes", "audit budget: within-budget"},
			check:  "audit budget: same-episodes",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "ev-rl-flaky.spider-greedy", records.KindRunStart)[0].Seq
			},
		},
		{
			name: "the rl rollout's unfinished episodes are named",
			fault: func(t *testing.T, x *gateExperiment) []string {
				var failed *sync.Map
				x.endpoint, failed = gateWireFlaky(t, x)
				x.evalRun(t, "rl", "ev-rl-flaky", x.data, x.identity["rl"], "--allow-incomplete", "--max-attempts", "1")
				want := []string{"4 of 40 episodes unfinished"}
				failed.Range(func(k, _ any) bool {
					want = append(want, rollout.EpisodeUser(k.(string), 0))
					return true
				})
				if len(want) != 5 {
					t.Fatalf("the endpoint failed %d tasks, want 4", len(want)-1)
				}
				return want
			},
			failed: []string{"audit budget: same-episodes", "audit budget: within-budget"},
			check:  "audit budget: within-budget",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				for _, e := range gateLog(t, x.ledger, "ev-rl-flaky", "trajectories") {
					if strings.Contains(string(e.Body), string(rollout.StopTransport)) {
						return e.Seq
					}
				}
				t.Fatal("no trajectories entry holds an unfinished episode")
				return 0
			},
		},
		{
			name: "the rl grading used a changed database (--allow-db-mismatch)",
			fault: func(t *testing.T, x *gateExperiment) []string {
				root, before, after := gateWireChangedDatabases(t, "concert_singer")
				x.evalRun(t, "rl", "ev-rl-mismatch", x.data, x.identity["rl"], "--db-root", root, "--allow-db-mismatch")
				return []string{"concert_singer", before.String(), after.String()}
			},
			failed: []string{"audit budget: same-dataset"},
			check:  "audit budget: same-dataset",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "ev-rl-mismatch.spider-greedy", records.KindRunStart)[0].Seq
			},
		},
		{
			name: "the noupdate grading ran under another SQLite version",
			fault: func(t *testing.T, x *gateExperiment) []string {
				gateWireRegrade(t, x, "noupdate", "ev-noupdate.spider-greedy", "ev-noupdate.sqlite-3.42", "3.42.0")
				return []string{"sqlite version", "noupdate 3.42.0"}
			},
			failed: []string{"audit budget: same-dataset"},
			check:  "audit budget: same-dataset",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "ev-noupdate.sqlite-3.42", records.KindRunStart)[0].Seq
			},
		},
		{
			name: "a database of the rl evaluation changed after grading",
			fault: func(t *testing.T, x *gateExperiment) []string {
				root := filepath.Join(t.TempDir(), "databases")
				if err := os.CopyFS(root, os.DirFS("../../testdata/spider/database")); err != nil {
					t.Fatal(err)
				}
				x.evalRun(t, "rl", "ev-rl-copy", x.data, x.identity["rl"], "--db-root", root)
				recorded, actual := gateWireChangeDatabase(t, root, "concert_singer")
				return []string{"concert_singer", recorded.String(), actual.String()}
			},
			failed: []string{"audit reward: gold-self-grade"},
			check:  "audit reward: gold-self-grade",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "ev-rl-copy.spider-greedy", records.KindRunStart)[0].Seq
			},
		},
		{
			name: "the rl training's metrics file was never written",
			fault: func(t *testing.T, x *gateExperiment) []string {
				x.trainRun(t, "rl", "train-rl-nometrics", x.written["rl"], "1e-6", 0.25, "--param", "lr=1e-6",
					"--metrics", filepath.Join(t.TempDir(), "never.jsonl")+":verl")
				var end struct {
					Findings []string `json:"metric_findings"`
				}
				if err := json.Unmarshal(gateLog(t, x.ledger, "train-rl-nometrics", records.KindRunEnd)[0].Body, &end); err != nil || len(end.Findings) == 0 {
					t.Fatalf("run.end records no metric_findings: %v", err)
				}
				return end.Findings
			},
			failed: []string{"audit training: metric-findings"},
			check:  "audit training: metric-findings",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "train-rl-nometrics", records.KindRunEnd)[0].Seq
			},
		},
		{
			name: "the rl training stage exited 7",
			fault: func(t *testing.T, x *gateExperiment) []string {
				out := filepath.Join(t.TempDir(), "out")
				metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
				code, _, errOut := rlgate(t, "--ledger", x.ledger, "run", "--stage", "rl", "--run", "train-rl-exit7", "--gpu", "off",
					"--in", "base="+x.base, "--in", "data="+x.trainData["rl"], "--out", "ckpt="+out, "--metrics", metrics+":verl", "--",
					"sh", "-c", fmt.Sprintf("mkdir -p %s && cp -r %s/. %s && cp %s %s && exit 7", out, x.written["rl"], out, filepath.Join(x.fixture, "train-rl.jsonl"), metrics))
				if code == exitOK {
					t.Fatalf("a stage that exited 7 passed: %s", errOut)
				}
				x.train = gateSetLabel(x.train, "rl", "train-rl-exit7")
				return []string{"exited 7"}
			},
			failed: []string{"audit training: run-ok"},
			check:  "audit training: run-ok",
			seq: func(t *testing.T, x *gateExperiment) int64 {
				return gateLog(t, x.ledger, "train-rl-exit7", records.KindRunEnd)[0].Seq
			},
		},
	}
	runGateFaults(t, clean, tests)
}

// gateWireFlaky starts an endpoint that answers as the experiment's does
// (rl solves every task) except that every task whose dev index ends in 3
// gets 503, a transport failure; it returns its URL and the task ids it
// failed.
func gateWireFlaky(t *testing.T, x *gateExperiment) (string, *sync.Map) {
	t.Helper()
	golds, err := gold.Read(filepath.Join(x.data, dataset.GoldFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gold.Gold{}
	for _, g := range golds {
		byID[g.ID] = g
	}
	failed := &sync.Map{}
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		g := byID[r.TaskID]
		if g.Index%10 == 3 {
			failed.Store(r.TaskID, true)
			return rollouttest.Reply{Status: 503}
		}
		return rollouttest.Reply{Content: "<think>t</think><solution>" + g.SQL + "</solution>"}
	})
	return srv.URL, failed
}

// gateWireChangedDatabases copies the Spider test databases and changes
// db in the copy; it returns the copy's root and db's digest before and
// after the change.
func gateWireChangedDatabases(t *testing.T, db string) (string, ledger.Digest, ledger.Digest) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "databases")
	if err := os.CopyFS(root, os.DirFS("../../testdata/spider/database")); err != nil {
		t.Fatal(err)
	}
	before, after := gateWireChangeDatabase(t, root, db)
	return root, before, after
}

// gateWireChangeDatabase adds a table to database db under root, as a
// later release or a stray write would change it, and returns its digest
// before and after.
func gateWireChangeDatabase(t *testing.T, root, db string) (ledger.Digest, ledger.Digest) {
	t.Helper()
	path := dataset.DBPath(root, db)
	hash := func() ledger.Digest {
		d, _, err := manifests.HashFile(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := hash()
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec("CREATE TABLE wire_extra (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	return before, hash()
}

// gateWireRegrade records grading run from again as run, with its
// run.start naming sqlite as the SQLite version it graded with, and makes
// it label's evaluation: what a grading by a build linked against another
// SQLite records, which this binary cannot produce.
func gateWireRegrade(t *testing.T, x *gateExperiment, label, from, run, sqlite string) {
	t.Helper()
	l, err := ledger.Open(context.Background(), x.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var recs []ledger.Record
	for e, err := range l.Entries(context.Background(), ledger.Filter{Run: from}) {
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if e.Kind == records.KindRunStart {
			body["database_check"].(map[string]any)["sqlite_version"] = sqlite
		}
		recs = append(recs, ledger.Record{Kind: e.Kind, Run: run, Body: body, Blobs: e.Blobs})
	}
	for _, r := range recs {
		if _, err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	x.runs = gateSetLabel(x.runs, label, run)
}
