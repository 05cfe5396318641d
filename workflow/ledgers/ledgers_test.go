package ledgers

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
)

// TestLogFirstAndLast: Log keeps the first Limit or the last Tail of the
// matching entries, in chain order, whatever the ring of the tail wrapped
// to; its text names what chose them.
func TestLogFirstAndLast(t *testing.T) {
	l := ledgertest.New(t) // holds ledger.init at seq 1
	for i := range 6 {
		if _, err := l.Append(t.Context(), ledger.Record{Kind: records.KindLog, Run: "r", Body: map[string]int{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func(s *Listed) []int64 {
		var out []int64
		for _, e := range s.Entries {
			out = append(out, e.Seq)
		}
		return out
	}
	for _, tt := range []struct {
		o    LogOptions
		want []int64
		note string
	}{
		{LogOptions{}, []int64{1, 2, 3, 4, 5, 6, 7}, "7 entries\n"},
		{LogOptions{Limit: 2}, []int64{1, 2}, "2 entries (the first 2)\n"},
		{LogOptions{Tail: 3}, []int64{5, 6, 7}, "3 entries (the last 3)\n"},
		{LogOptions{Tail: 4, Run: "r"}, []int64{4, 5, 6, 7}, "4 entries (run r, the last 4)\n"},
		{LogOptions{Tail: 9}, []int64{1, 2, 3, 4, 5, 6, 7}, "7 entries (the last 9)\n"},
	} {
		s, err := Log(t.Context(), l.Dir(), tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(s); !slices.Equal(got, tt.want) {
			t.Errorf("%+v: seqs %v, want %v", tt.o, got, tt.want)
		}
		var b bytes.Buffer
		if err := s.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), tt.note) {
			t.Errorf("%+v: text ends %q, want %q", tt.o, b.String()[max(0, b.Len()-40):], tt.note)
		}
	}
}
