package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/tasks"
)

var ctx = context.Background()

const spiderDir = "../../testdata/spider"

var spider struct {
	once  sync.Once
	tasks []tasks.Task
	err   error
}

// spiderTasks returns the public tasks of the Spider dev set, imported
// once per test binary.
func spiderTasks(tb testing.TB) []tasks.Task {
	tb.Helper()
	spider.once.Do(func() {
		im, err := dataset.ImportSpider(ctx, dataset.SpiderOptions{Dev: spiderDir + "/dev.json", Gold: spiderDir + "/dev_gold.sql", DBRoot: spiderDir + "/database"})
		if err == nil {
			spider.tasks = im.Tasks
		}
		spider.err = err
	})
	if spider.err != nil {
		tb.Fatal(spider.err)
	}
	return spider.tasks
}

func dbPath(id string) string { return dataset.DBPath(spiderDir+"/database", id) }

// options returns rollout options for the first n Spider tasks against url.
func options(tb testing.TB, run, url string, n int) rollout.Options {
	return rollout.Options{Run: run, Tasks: spiderTasks(tb)[:n], TasksPath: spiderDir, DBRoot: spiderDir + "/database", DBPath: dbPath,
		Endpoint: url, Model: "scripted", Protocol: rollout.DefaultProtocol(), Concurrency: 4,
		Client: rollout.ClientOptions{Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, RequestTimeout: 5 * time.Second}}
}

func TestRolloutRecordsEveryTurn(t *testing.T) {
	l := ledgertest.New(t)
	srv := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	o := options(t, "r1", srv.URL, 20)
	o.Protocol.Sampling.N = 2
	s, err := rollout.Play(ctx, l, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != "ok" || s.Episodes != 40 || s.Ran != 40 || s.StopReasons[rollout.StopSolution] != 40 || s.Resumed {
		t.Fatalf("summary %+v", s)
	}
	if got := srv.Requests.Load(); got != 120 {
		t.Errorf("%d requests, want 3 per episode", got)
	}
	eps, err := rollout.ReadEpisodes(ctx, l, "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		if len(ep.Turns) != 3 || ep.Usage.SQLExecutions != 2 || ep.FinalSQL != "SELECT count(*) FROM sqlite_master" || ep.Usage.Estimated {
			t.Fatalf("episode %s#%d: %+v", ep.TaskID, ep.Sample, ep.Usage)
		}
		probe := ep.Turns[0]
		if probe.SQLStatus != "ok" || !strings.HasPrefix(probe.Observation, "STATUS: OK\nROW_COUNT: 1\n") || probe.TokensIn == 0 ||
			!strings.Contains(string(probe.Request), `"user":"`+ep.TaskID+`#`) || !strings.Contains(string(probe.Response), "<sql>") {
			t.Fatalf("first turn %+v", probe)
		}
		// The stripped stop string is restored in the history the next request carries.
		if next := string(ep.Turns[1].Request); !strings.Contains(next, `type = 'table'</sql>"`) {
			t.Errorf("second request lacks the restored closing tag: %s", next)
		}
	}
	start, err := rollout.ReadStart(ctx, l, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := o.Protocol.Digest()
	if start.ProtocolDigest != want || start.Count != 20 || start.Model != "scripted" {
		t.Errorf("start %+v", start)
	}
}

// TestFaultsEndEveryEpisode plays against an endpoint that misbehaves in
// every way the issue lists: every episode has the expected stop reason,
// no budget is exceeded, nothing is lost; the episodes whose requests
// always fail are left unfinished and the run failed.
func TestFaultsEndEveryEpisode(t *testing.T) {
	t.Parallel() // its own ledger and server; mostly waits on the faults
	const kinds = 12
	want := map[int]rollout.StopReason{}
	normal := rollouttest.ThreeTurns(nil)
	script := func(r *rollouttest.Request) rollouttest.Reply {
		var idx int
		for i, tk := range spiderTasks(t) {
			if tk.ID == r.TaskID {
				idx = i
			}
		}
		switch idx % kinds {
		case 1: // slow but within the timeout
			rep := normal(r)
			rep.Delay = 20 * time.Millisecond
			return rep
		case 2: // a 500 before every good reply
			if r.Attempt == 1 {
				return rollouttest.Reply{Status: 500}
			}
		case 3: // always 503: unfinished
			return rollouttest.Reply{Status: 503}
		case 4: // connection dropped once
			if r.Attempt == 1 {
				return rollouttest.Reply{Fault: rollouttest.Drop}
			}
		case 5: // malformed JSON once
			if r.Attempt == 1 {
				return rollouttest.Reply{Fault: rollouttest.Malformed}
			}
		case 6: // never a tag
			return rollouttest.Reply{Content: "SELECT name FROM singer"}
		case 7: // endless <sql>
			return rollouttest.Reply{Content: "<think>more</think><sql>SELECT 1</sql>"}
		case 8: // a client error is final
			return rollouttest.Reply{Status: 400}
		case 9: // slower than the request timeout once, and no usage
			rep := normal(r)
			rep.NoUsage = true
			if r.Attempt == 1 {
				rep.Delay = 2 * time.Second
			}
			return rep
		case 10: // the server counts more tokens than the context allows
			return rollouttest.Reply{Content: "<think>x</think><sql>SELECT 1</sql>", Usage: &rollout.Usage{PromptTokens: 20000, CompletionTokens: 5}}
		case 11: // a query that runs past the SQL timeout, then an answer
			if r.Turn == 0 {
				return rollouttest.Reply{Content: "<think>slow</think><sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c</sql>"}
			}
			return rollouttest.Reply{Content: "<think>ok</think><solution>SELECT 1</solution>"}
		}
		return normal(r)
	}
	for i := range 2 * kinds {
		want[i] = rollout.StopSolution
		switch i % kinds {
		case 3:
			want[i] = rollout.StopTransport
		case 8:
			want[i] = rollout.StopHTTPError
		case 6:
			want[i] = rollout.StopFormatFailures
		case 7:
			want[i] = rollout.StopMaxTurns
		case 10:
			want[i] = rollout.StopBudget
		}
	}
	l := ledgertest.New(t)
	srv := rollouttest.New(t, script)
	o := options(t, "faults", srv.URL, 2*kinds)
	o.Concurrency = 8
	o.Client.RequestTimeout = 300 * time.Millisecond
	o.Protocol.SQLTimeoutMS = 200
	s, err := rollout.Play(ctx, l, o)
	if !errors.Is(err, rollout.ErrIncomplete) || s.Status != "failed" || s.Episodes != 2*kinds-2 || s.Unfinished != 2 {
		t.Fatalf("%v, summary %+v", err, s)
	}
	p := o.Protocol
	eps, err := rollout.ReadEpisodes(ctx, l, "faults")
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, tk := range o.Tasks {
		index[tk.ID] = i
	}
	for _, ep := range eps {
		i := index[ep.TaskID]
		if ep.StopReason != want[i] {
			t.Errorf("task %d (%s): stop %s, want %s; error %q", i, ep.TaskID, ep.StopReason, want[i], ep.Error)
		}
		u := ep.Usage
		if u.Turns > p.MaxTurns || u.SQLExecutions > p.SQLBudget || u.FormatFailures > p.FormatRetries+1 || u.Turns != len(ep.Turns) {
			t.Errorf("task %d: budget exceeded: %+v", i, u)
		}
		for _, tr := range ep.Turns {
			if !tr.OverBudget && tr.TokensIn+tr.TokensOut > p.ContextTokens {
				t.Errorf("task %d turn %d: %d tokens acted upon", i, tr.Index, tr.TokensIn+tr.TokensOut)
			}
			var req rollout.ChatRequest
			if err := json.Unmarshal(tr.Request, &req); err != nil || req.MaxTokens > p.MaxTokensPerTurn || req.MaxTokens < 1 || req.N != 1 {
				t.Errorf("task %d turn %d: request %s: %v", i, tr.Index, tr.Request, err)
			}
		}
		switch i % kinds {
		case 2, 4, 5:
			if len(ep.Turns[0].Retried) != 1 {
				t.Errorf("task %d: retries not recorded: %+v", i, ep.Turns[0].Retried)
			}
		case 3:
			t.Errorf("task %d: an unfinished episode is read as finished", i)
		case 7:
			if u.Turns != p.MaxTurns || u.SQLExecutions != p.MaxTurns-1 || ep.Turns[p.MaxTurns-1].SQLStatus != "not_run" {
				t.Errorf("endless sql: %+v", u)
			}
		case 9:
			if !u.Estimated {
				t.Errorf("task %d: tokens without usage not flagged estimated", i)
			}
		case 10:
			if !ep.Turns[0].OverBudget || u.SQLExecutions != 0 {
				t.Errorf("task %d: over-budget reply was acted upon: %+v", i, ep.Turns[0])
			}
		case 11:
			if ep.Turns[0].SQLStatus != "timeout" || !strings.Contains(ep.Turns[0].Observation, "timed out") {
				t.Errorf("task %d: %+v", i, ep.Turns[0])
			}
		}
	}
}

func TestResumeAfterInterruptPlaysOnlyTheRest(t *testing.T) {
	t.Parallel() // its own ledger and server; mostly waits on the server's delay
	l := ledgertest.New(t)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		rep := rollouttest.ThreeTurns(nil)(r)
		rep.Delay = 10 * time.Millisecond
		return rep
	})
	o := options(t, "resumed", srv.URL, 60)
	o.FlushEvery = 20 * time.Millisecond
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			if rs, _ := rollout.ReadRecorded(ctx, l, "resumed"); len(rs) >= 10 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	s, err := rollout.Play(cctx, l, o)
	if !errors.Is(err, context.Canceled) || s.Status != "interrupted" || s.Episodes < 10 || s.Episodes >= 60 {
		t.Fatalf("interrupted run: %v, %+v", err, s)
	}
	first := s.Episodes
	s, err = rollout.Play(ctx, l, o)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Resumed || s.Skipped != first || s.Ran != 60-first || s.Episodes != 60 || s.Status != "ok" {
		t.Fatalf("resumed run: %+v", s)
	}
	o.Run = "uninterrupted"
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	if a, b := rollouttest.Episodes(t, l, "resumed"), rollouttest.Episodes(t, l, "uninterrupted"); rollouttest.EpisodesDiff(b, a) != "" {
		t.Errorf("resumed run differs from an uninterrupted one (%d vs %d episodes; -uninterrupted +resumed):\n%s", len(a), len(b), rollouttest.EpisodesDiff(b, a))
	}

	// A finished run is complete; other settings are refused.
	o.Run = "resumed"
	if s, err := rollout.Play(ctx, l, o); err != nil || s.Status != "complete" || s.Ran != 0 || s.Episodes != 60 {
		t.Errorf("rerun of a finished run: %v, %+v", err, s)
	}
	o.Protocol.MaxTurns = 5
	if _, err := rollout.Play(ctx, l, o); !errors.Is(err, rollout.ErrRunMismatch) {
		t.Errorf("other protocol: %v", err)
	}
	o.Protocol = rollout.DefaultProtocol()
	o.Tasks = o.Tasks[:59]
	if _, err := rollout.Play(ctx, l, o); !errors.Is(err, rollout.ErrRunMismatch) {
		t.Errorf("other task set: %v", err)
	}
}

func TestReplayReproducesTheRun(t *testing.T) {
	t.Parallel() // its own ledger and servers
	l := ledgertest.New(t)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if r.Sample == 1 && r.Turn == 0 {
			return rollouttest.Reply{Content: "no tags"} // a correction round, replayed too
		}
		return rollouttest.ThreeTurns(nil)(r)
	})
	o := options(t, "recorded", srv.URL, 15)
	o.Protocol.Sampling.N = 2
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	rp, err := rollout.NewReplay(ctx, l, "recorded")
	if err != nil {
		t.Fatal(err)
	}
	if rp.Episodes() != 30 || rp.Model() != "scripted" {
		t.Fatalf("replay holds %d episodes of %q", rp.Episodes(), rp.Model())
	}
	replay := httptest.NewServer(rp)
	defer replay.Close()
	o.Run, o.Endpoint = "replayed", replay.URL+"/v1"
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	a, b := rollouttest.Episodes(t, l, "recorded"), rollouttest.Episodes(t, l, "replayed")
	if diff := rollouttest.EpisodesDiff(a, b); diff != "" {
		t.Errorf("the replayed run differs from the recorded one (-recorded +replayed):\n%s", diff)
	}

	// Requests outside the recording are refused with a client error.
	res, err := http.Post(replay.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"user": "nope#0", "messages": []}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown episode: status %d", res.StatusCode)
	}
	ep := a[rollout.EpisodeUser(o.Tasks[0].ID, 0)]
	res, err = http.Post(replay.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(ep.Turns[0].Request)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get(rollout.ReplayHeader) != "exact" {
		t.Errorf("recorded request replayed as %q", res.Header.Get(rollout.ReplayHeader))
	}
}

// TestRolloutCannotReachGold checks the package's whole dependency
// graph, not only its direct imports: the policy side never links gold.
func TestRolloutCannotReachGold(t *testing.T) {
	// The import check is the guarantee the tasks package's doc promises:
	// when go list cannot run, the test fails rather than skip in silence.
	cmd := exec.Command("go", "list", "-deps", "github.com/rlgate/rlgate/stages/rollout")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps stages/rollout: %v\n%s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	// A listing without the tasks package (which rollout does import) would
	// prove nothing about gold.
	if !slices.Contains(deps, "github.com/rlgate/rlgate/stages/tasks") {
		t.Fatalf("go list -deps stages/rollout does not list stages/tasks; it printed:\n%s", out)
	}
	for _, dep := range deps {
		if strings.HasSuffix(dep, "/stages/gold") || strings.HasSuffix(dep, "/stages/grade") || strings.HasSuffix(dep, "/stages/dataset") {
			t.Errorf("stages/rollout depends on %s", dep)
		}
	}
}
