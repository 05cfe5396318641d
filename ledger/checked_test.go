package ledger_test

import (
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// checkedLedger writes a small run with outcomes and returns its directory,
// closed, so a test can edit ledger.db underneath.
func checkedLedger(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Append(ctx,
		ledger.Record{Kind: records.KindRunStart, Run: "ev", Body: map[string]any{"stage": "eval"}},
		ledger.Record{Kind: records.KindOutcomes, Run: "ev", Body: ledger.Outcomes{Items: []ledger.Outcome{{TaskID: "a"}, {TaskID: "b", Correct: true}}}},
		ledger.Record{Kind: records.KindMetrics, Run: "ev", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: 2, Key: "loss", Value: 0.5}, {Step: 1, Key: "loss", Value: 0.9}, {Step: 1, Key: "kl", Value: 1}}}},
		ledger.Record{Kind: records.KindRunEnd, Run: "ev", Body: ledger.RunEnd{Status: "failed", ExitCode: new(7)}},
		ledger.Record{Kind: "note", Body: map[string]int{"i": 5}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func openChecked(t *testing.T, dir string, at int64) (*ledger.Ledger, error) {
	t.Helper()
	l, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := l.Checked(ctx, at)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestCheckedIgnoresEditedDerivedRows: what a decision reads comes from
// the entries, so rows edited in the derived tables change nothing.
func TestCheckedIgnoresEditedDerivedRows(t *testing.T) {
	dir := checkedLedger(t)
	rawExec(t, dir, `UPDATE outcomes SET correct = 1`)
	rawExec(t, dir, `UPDATE runs SET status = 'ok', exit_code = 0`)
	rawExec(t, dir, `UPDATE metrics SET vals = zeroblob(8 * n)`)
	c, err := openChecked(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Outcomes(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	var correct []bool
	for _, o := range out {
		correct = append(correct, o.Correct)
	}
	if diff := cmp.Diff([]bool{false, true}, correct); diff != "" {
		t.Errorf("outcomes (-entries +read):\n%s", diff)
	}
	r, err := c.RunStatus(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "failed" || r.ExitCode == nil || *r.ExitCode != 7 {
		t.Errorf("run ev reads %s exit %v; its run.end says failed, exit 7", r.Status, r.ExitCode)
	}
	pts, seqs, err := c.Series(ctx, "ev", "loss")
	if diff := cmp.Diff([]ledger.MetricPoint{{Step: 1, Key: "loss", Value: 0.9}, {Step: 2, Key: "loss", Value: 0.5}}, pts); err != nil || diff != "" || len(seqs) != 2 || seqs[0] != 4 {
		t.Errorf("series loss: %v, seqs %v (-entries +read):\n%s", err, seqs, diff)
	}
	if _, err := c.Append(ctx, ledger.Record{Kind: "note", Body: map[string]int{}}); !errors.Is(err, ledger.ErrReadOnlyView) {
		t.Errorf("append to a checked view: %v, want ErrReadOnlyView", err)
	}
}

// TestCheckedRefusesTamperedEntries: an edited entry stops the read,
// naming its seq.
func TestCheckedRefusesTamperedEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tamper  func(t *testing.T, dir string)
		at      int64
		seq     int64
		message string
	}{
		{"body edited", func(t *testing.T, dir string) {
			rawExec(t, dir, `UPDATE entries SET body = replace(body, '"failed"', '"ok"') WHERE seq = 5`)
		}, 0, 5, "does not match its hash"},
		{"body and hash column rewritten", func(t *testing.T, dir string) {
			rewriteChain(t, dir, 3, 3, func(e *ledger.Entry) { e.Body = []byte(`{"items":[{"correct":true,"sample":0,"task_id":"a"}]}`) })
		}, 0, 4, "is not linked to entry 3"},
		{"entry deleted", func(t *testing.T, dir string) {
			rawExec(t, dir, `DELETE FROM entries WHERE seq = 2`)
		}, 0, 2, "is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := checkedLedger(t)
			tc.tamper(t, dir)
			_, err := openChecked(t, dir, tc.at)
			var te *ledger.TamperedError
			if !errors.As(err, &te) || !errors.Is(err, ledger.ErrTampered) {
				t.Fatalf("got %v, want a TamperedError", err)
			}
			if te.Seq != tc.seq || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("got %q (seq %d), want seq %d and %q", err, te.Seq, tc.seq, tc.message)
			}
		})
	}
}

// TestCheckedAsOf: a view as of an earlier entry holds nothing after it,
// and entries after it are not read at all.
func TestCheckedAsOf(t *testing.T) {
	dir := checkedLedger(t)
	rawExec(t, dir, `UPDATE entries SET body = '{}' WHERE seq = 6`)
	c, err := openChecked(t, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Head(ctx)
	if err != nil || h.Seq != 3 {
		t.Fatalf("head of a view as of entry 3: %v, %v", h, err)
	}
	if r, err := c.RunStatus(ctx, "ev"); err != nil || r.Status != "running" {
		t.Errorf("as of entry 3 run ev has not ended: %+v, %v", r, err)
	}
	if _, err := openChecked(t, dir, 99); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a view past the head: %v, want ErrNotFound", err)
	}
}

// TestCheckedRereadsEntries: an entry edited after the view was opened is
// refused when it is read again, and so is one deleted; rows derived later
// come from the bytes the view checked.
func TestCheckedRereadsEntries(t *testing.T) {
	dir := checkedLedger(t)
	c, err := openChecked(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	rawExec(t, dir, `UPDATE entries SET body = replace(body, '"correct":true', '"correct":false') WHERE seq = 3`)
	// Outcomes come from the bytes the walk checked, not from a second read.
	if out, err := c.Outcomes(ctx, "ev"); err != nil || len(out) != 2 || !out[1].Correct {
		t.Errorf("outcomes after entry 3 changed: %+v, %v; want those the view checked", out, err)
	}
	if _, err := c.EntryBySeq(ctx, 3); !errors.Is(err, ledger.ErrTampered) {
		t.Errorf("entry 3 after it changed: %v, want ErrTampered", err)
	}
	rawExec(t, dir, `DELETE FROM entries WHERE seq = 5`)
	for _, err := range c.Entries(ctx, ledger.Filter{Run: "ev"}) {
		if err != nil {
			if !errors.Is(err, ledger.ErrTampered) {
				t.Errorf("entries of run ev: %v, want ErrTampered", err)
			}
			return
		}
	}
	t.Errorf("entries of run ev after entry 4 was deleted: no error")
}

// TestCheckedAcrossPages: the walk reads a ledger in pages on several
// cores, and still finds what is wrong where it is, in ledger order: a
// whole page of entries gone, an entry edited near the end, and the
// first of two faults when both are there.
func TestCheckedAcrossPages(t *testing.T) {
	const n = 300
	build := func(t *testing.T) string {
		dir := t.TempDir()
		l, err := ledger.Init(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		recs := make([]ledger.Record, n-1)
		for i := range recs {
			recs[i] = ledger.Record{Kind: "note", Body: map[string]int{"i": i}}
		}
		if _, err := l.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	c, err := openChecked(t, build(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for e, err := range c.Entries(ctx, ledger.Filter{Kind: "note"}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != n-1 || seqs[n-2] != n {
		t.Fatalf("a clean ledger of %d entries: %d notes read", n, len(seqs))
	}
	for _, tc := range []struct {
		name   string
		sql    string
		seq    int64
		reason string
	}{
		{"a page deleted", `DELETE FROM entries WHERE seq > 64 AND seq <= 128`, 65, "is missing (the chain jumps from entry 64 to 129)"},
		{"an entry edited near the end", `UPDATE entries SET body = replace(body, '"i":290', '"i":291') WHERE seq = 292`, 292, "does not match its hash"},
		{"the first of two faults", `UPDATE entries SET body = replace(body, '"i"', '"j"') WHERE seq IN (100, 250)`, 100, "does not match its hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := build(t)
			rawExec(t, dir, tc.sql)
			_, err := openChecked(t, dir, 0)
			var te *ledger.TamperedError
			if !errors.As(err, &te) || te.Seq != tc.seq || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want entry %d %q", err, tc.seq, tc.reason)
			}
		})
	}
}
