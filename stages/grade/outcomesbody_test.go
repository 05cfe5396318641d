package grade

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// checkOutcomesBody fails unless outcomesBody writes items as the
// generic route (CanonicalJSON of {"items": items}) does, or both refuse.
func checkOutcomesBody(t *testing.T, items []Item) {
	t.Helper()
	w := &ledger.CanonicalWriter{}
	outcomesBody(items).EncodeCanonical(w)
	got, gotErr := w.Bytes()
	want, wantErr := ledger.CanonicalJSON(map[string]any{"items": items})
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("outcomesBody error %v, CanonicalJSON error %v", gotErr, wantErr)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("outcomes body (-CanonicalJSON +outcomesBody):\n%s", diff)
	}
}

// checkStoredOutcomes fails unless the outcomes entries s's grading
// appended hold, byte for byte, what the generic route makes of its items:
// real items, with whatever fields the metric fills.
func checkStoredOutcomes(t *testing.T, l *ledger.Ledger, s *FileSummary) {
	t.Helper()
	var stored []byte
	n := 0
	for e, err := range l.Entries(context.Background(), ledger.Filter{Kind: records.KindOutcomes, Run: s.Run}) {
		if err != nil {
			t.Fatal(err)
		}
		stored, n = e.Body, n+1
	}
	if n != 1 {
		t.Fatalf("%d outcomes entries in run %s, want 1", n, s.Run)
	}
	want, err := ledger.CanonicalJSON(map[string]any{"items": s.Items})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(stored)); diff != "" {
		t.Errorf("stored outcomes of %s (-CanonicalJSON +stored):\n%s", s.Run, diff)
	}
}

func TestOutcomesBodyIsItsJSON(t *testing.T) {
	r, sc, zero := 0.25, 1/3.0, 0.0
	full := Item{Outcome: ledger.Outcome{TaskID: "bird-0037", Sample: 3, Correct: true, Reward: &r}, Index: 37, DBID: "debit_card_specializing",
		Difficulty: "moderate", Verdict: VerdictCorrect, Error: "near \"SELEC\": syntax error\n\t<>&\u2028", Fragile: true,
		FragileReason: "a float sum's order", Score: &sc}
	checkOutcomesBody(t, []Item{
		full,
		{Outcome: ledger.Outcome{TaskID: "spider-0000"}, DBID: "concert_singer", Verdict: VerdictWrong},
		{Outcome: ledger.Outcome{TaskID: "t", Reward: &zero}, Score: &zero, Index: 1 << 40},
		{Outcome: ledger.Outcome{TaskID: "bad utf-8 \xff", Sample: -1}, DBID: "é😀", Error: "\x00\x1f\x7f"},
	})
	checkOutcomesBody(t, []Item{})
	nan := math.NaN()
	checkOutcomesBody(t, []Item{{Score: &nan}}) // both refuse
}

// FuzzOutcomesBody checks outcomesBody against the generic route on items
// of fuzzed strings and numbers.
func FuzzOutcomesBody(f *testing.F) {
	f.Add("spider-0001", "concert_singer", "easy", "wrong", "", "", 0, 3, true, false, 0.5, 1.0, true, true)
	f.Add("t\n", "\xff", "", "x", "err \"q\"", "last digits", -1, 1<<53+1, false, true, math.Inf(1), 1e21, false, true)
	f.Fuzz(func(t *testing.T, id, db, diff, verdict, msg, reason string, sample, index int, correct, fragile bool, reward, score float64, hasReward, hasScore bool) {
		it := Item{Outcome: ledger.Outcome{TaskID: id, Sample: sample, Correct: correct}, Index: index, DBID: db, Difficulty: diff,
			Verdict: Verdict(verdict), Error: msg, Fragile: fragile, FragileReason: reason}
		if hasReward {
			it.Reward = &reward
		}
		if hasScore {
			it.Score = &score
		}
		checkOutcomesBody(t, []Item{it, {Outcome: ledger.Outcome{TaskID: id}}})
	})
}
