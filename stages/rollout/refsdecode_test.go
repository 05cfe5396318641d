package rollout

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// trajectoryBodies are trajectories bodies the scanner must read as
// encoding/json does, or leave to it: canonical ones, and others in each
// way it checks.
var trajectoryBodies = []string{
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[{"final_sql":"SELECT 1","length":12901,"line":0,"offset":0,"sample":0,"sql_executions":2,"stop_reason":"solution","task_id":"t-0","tokens_in":2099,"tokens_out":71,"turns":3}]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":null}`,
	`{"blob":"blake3:0aeadf8e","episodes":[]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[{"final_sql":"SELECT \"a\"","length":1,"line":0,"offset":0,"sample":0,"sql_executions":0,"stop_reason":"solution","task_id":"t","tokens_in":0,"tokens_out":0,"turns":1}]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[{"final_sql":"","length":1.5,"line":0,"offset":0,"sample":0,"sql_executions":0,"stop_reason":"","task_id":"t","tokens_in":0,"tokens_out":0,"turns":1}]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[{"final_sql":"","length":1,"line":99999999999999999999,"offset":0,"sample":0,"sql_executions":0,"stop_reason":"","task_id":"t","tokens_in":0,"tokens_out":0,"turns":1}]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[{"final_sql":"\xff","length":1,"line":0,"offset":0,"sample":0,"sql_executions":0,"stop_reason":"","task_id":"t","tokens_in":0,"tokens_out":0,"turns":1}]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[{"final_sql":"","length":-0,"line":0,"offset":0,"sample":0,"sql_executions":0,"stop_reason":"","task_id":"t","tokens_in":0,"tokens_out":0,"turns":1,"extra":2}]}`,
	`{"blob":"blake3:0aeadf8e3574f6b9332c0c65e7f3489a732fa214b91a007df1ffd854fc8ad9f1","episodes":[]} `,
}

// TestScanTrajectoriesAgreesWithJSON: bodies as the ledger writes them
// are scanned, not left to encoding/json, and every body reads as
// encoding/json reads it.
func TestScanTrajectoriesAgreesWithJSON(t *testing.T) {
	for _, b := range trajectoryBodies {
		checkScanTrajectories(t, []byte(b))
	}
	tr := Trajectories{Blob: ledger.Sum([]byte("x"))}
	for i := range 300 {
		tr.Episodes = append(tr.Episodes, EpisodeRef{TaskID: fmt.Sprintf("spider-%04d/ü", i), Sample: i % 8, StopReason: StopSolution,
			Turns: 3, SQLExecutions: i % 3, TokensIn: 2000 + i, TokensOut: -i, FinalSQL: "SELECT count(*) FROM singer WHERE x < 3 AND name = \"ü\\n\" -- &",
			Line: i, Offset: int64(i) * 12901, Length: 12900})
	}
	b, err := ledger.CanonicalJSON(tr)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := scanTrajectories(b)
	if !ok {
		t.Fatalf("a canonical body was left to encoding/json")
	}
	if diff := cmp.Diff(tr, got); diff != "" {
		t.Errorf("scanned (-written +read):\n%s", diff)
	}
	checkScanTrajectories(t, b)
}

func FuzzScanTrajectories(f *testing.F) {
	for _, b := range trajectoryBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(checkScanTrajectories)
}

// checkScanTrajectories checks that decodeTrajectories reads body as
// encoding/json does: the same references, or an error from both.
func checkScanTrajectories(t *testing.T, body []byte) {
	t.Helper()
	var want Trajectories
	werr := json.Unmarshal(body, &want)
	got, gerr := decodeTrajectories(body)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: encoding/json: %v; decodeTrajectories: %v", body, werr, gerr)
	}
	if diff := cmp.Diff(want, got); werr == nil && diff != "" {
		t.Errorf("%.80s (-encoding/json +decodeTrajectories):\n%s", body, diff)
	}
}
