package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestFailClosesRunWithReason: a run closed by Fail is failed, not
// running, and its run.end says why.
func TestFailClosesRunWithReason(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.New(t)
	run, err := l.StartRun(ctx, "g", ledger.RunStart{Stage: "grade"})
	if err != nil {
		t.Fatal(err)
	}
	end, err := run.Fail(ctx, errors.New("open /nonexistent/x.sqlite: no such file"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := l.RunStatus(ctx, "g"); r.Status != "failed" || r.EndedSeq == nil || *r.EndedSeq != end.Seq {
		t.Errorf("run %+v", r)
	}
	var body map[string]any
	if err := json.Unmarshal(end.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": "failed", "reason": "open /nonexistent/x.sqlite: no such file"}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("run.end body (-want +got):\n%s", diff)
	}
}
