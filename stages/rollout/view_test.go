package rollout_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// hostileSQL is a query whose result, column names and SQL hold markup
// and the observation's separator.
const hostileSQL = `SELECT '<script>alert(1)</script>' AS "<b>x</b>", 'a|b' AS y`

// TestViewShowsTheRecordedTurns plays episodes that run hostileSQL, then
// a solution, and reads one back as a View: every turn as recorded, the
// observation read back as a table, the raw bodies byte for byte.
func TestViewShowsTheRecordedTurns(t *testing.T) {
	l := ledgertest.New(t)
	srv := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if r.Turn == 0 {
			return rollouttest.Reply{Content: "<think>Look <i>first</i>.</think>\n<sql>" + hostileSQL + "</sql>"}
		}
		return rollouttest.Reply{Content: "<think>Done.</think>\n<solution>SELECT 1 WHERE 2 > 1</solution>"}
	})
	o := options(t, "r1", srv.URL, 3)
	o.Protocol.Sampling.N = 2
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	eps, err := rollout.ReadEpisodes(ctx, l, "r1")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := rollout.ReadRecorded(ctx, l, "r1")
	if err != nil {
		t.Fatal(err)
	}
	ep, rec := eps[3], recs[3]
	v, err := rollout.ReadView(ctx, l, "r1", ep.TaskID, ep.Sample)
	if err != nil {
		t.Fatal(err)
	}
	if v.Episode != rec || v.Model != "scripted" || !v.Finished || v.StopReason != rollout.StopSolution || v.FinalSQL != "SELECT 1 WHERE 2 > 1" ||
		v.DBID != ep.DBID || v.Usage != ep.Usage || v.Limits.MaxTurns != o.Protocol.MaxTurns || v.Limits.SQLBudget != o.Protocol.SQLBudget {
		t.Errorf("view %+v of episode %+v", v, rec)
	}
	var first rollout.ChatRequest
	if err := json.Unmarshal(ep.Turns[0].Request, &first); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first.Messages, v.Prompt); diff != "" || len(v.Prompt) != 2 || v.Prompt[1].Role != "user" {
		t.Errorf("prompt (-first request +view):\n%s", diff)
	}
	if len(v.Turns) != len(ep.Turns) || len(v.Turns) != 2 {
		t.Fatalf("%d turns, recorded %d", len(v.Turns), len(ep.Turns))
	}
	for i, tv := range v.Turns {
		rt := ep.Turns[i]
		want := rollout.TurnView{Index: rt.Index, Status: rt.Status, Reply: rt.Reply, FinishReason: rt.FinishReason, Think: rt.Think, SQL: rt.SQL,
			SQLStatus: rt.SQLStatus, Solution: rt.Solution, Observation: rt.Observation, TokensIn: rt.TokensIn, TokensOut: rt.TokensOut,
			LatencyMS: rt.LatencyMS, SQLMS: rt.SQLMS, RequestBytes: len(rt.Request), ResponseBytes: len(rt.Response), Table: tv.Table}
		if diff := cmp.Diff(want, tv); diff != "" {
			t.Errorf("turn %d (-recorded +view):\n%s", i, diff)
		}
		for part, body := range map[rollout.BodyPart][]byte{rollout.PartRequest: rt.Request, rollout.PartResponse: rt.Response} {
			got, err := rollout.ReadBody(ctx, l, "r1", ep.TaskID, ep.Sample, i, part)
			if err != nil || string(got) != string(body) {
				t.Errorf("turn %d %s: %v, %d bytes, recorded %d", i, part, err, len(got), len(body))
			}
		}
	}
	probe := v.Turns[0]
	if probe.SQL != hostileSQL || probe.Think != "Look <i>first</i>." {
		t.Errorf("probe turn %+v", probe)
	}
	wantTable := &sqlenv.ObservationTable{OK: true, RowCount: "1", Columns: []string{"<b>x</b>", "y"}, Rows: [][]string{{"<script>alert(1)</script>", "a|b"}}}
	if diff := cmp.Diff(wantTable, probe.Table); diff != "" {
		t.Errorf("observation table (-want +got):\n%s\nof %q", diff, probe.Observation)
	}
	if v.Turns[1].Table != nil || v.Turns[1].Solution != "SELECT 1 WHERE 2 > 1" {
		t.Errorf("solution turn %+v", v.Turns[1])
	}

	if _, err := rollout.ReadView(ctx, l, "r1", "no-such-task", 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("unknown episode: %v", err)
	}
	if _, err := rollout.ReadBody(ctx, l, "r1", ep.TaskID, ep.Sample, 2, rollout.PartRequest); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("turn past the last: %v", err)
	}
	if _, err := rollout.ReadBody(ctx, l, "r1", ep.TaskID, ep.Sample, 0, "headers"); err == nil || !strings.Contains(err.Error(), `no part "headers"`) {
		t.Errorf("unknown part: %v", err)
	}
}

// TestViewOfAnUnfinishedEpisode: an episode every attempt of which failed
// is shown unfinished, with its error, until a resume finishes it; then
// the finished one is shown.
func TestViewOfAnUnfinishedEpisode(t *testing.T) {
	l := ledgertest.New(t)
	first := spiderTasks(t)[0].ID
	failing := rollouttest.New(t, func(r *rollouttest.Request) rollouttest.Reply {
		if r.TaskID == first {
			return rollouttest.Reply{Status: 503}
		}
		return rollouttest.ThreeTurns(nil)(r)
	})
	o := options(t, "r1", failing.URL, 2)
	o.Client.MaxAttempts = 2
	if _, err := rollout.Play(ctx, l, o); !errors.Is(err, rollout.ErrIncomplete) {
		t.Fatalf("play: %v, want ErrIncomplete", err)
	}
	v, err := rollout.ReadView(ctx, l, "r1", first, 0)
	if err != nil {
		t.Fatal(err)
	}
	if v.Finished || v.StopReason != rollout.StopTransport || v.Error == "" || len(v.Turns) != 1 || v.Turns[0].Retries != 1 || v.Turns[0].Error == "" {
		t.Errorf("unfinished view %+v", v)
	}
	o.Endpoint = rollouttest.New(t, rollouttest.ThreeTurns(nil)).URL
	if _, err := rollout.Play(ctx, l, o); err != nil {
		t.Fatal(err)
	}
	if v, err = rollout.ReadView(ctx, l, "r1", first, 0); err != nil || !v.Finished || v.StopReason != rollout.StopSolution || len(v.Turns) != 3 {
		t.Errorf("after the resume: %v, %+v", err, v)
	}
}
