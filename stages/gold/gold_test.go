package gold

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWrittenLinesReadFast checks that the lines Write gives are those
// readLine takes, to the values encoding/json reads from them: the fast
// path is the one every gold file rlgate wrote goes through.
func TestWrittenLinesReadFast(t *testing.T) {
	gs := []Gold{
		{ID: "spider-0000", Index: 0, DBID: "concert_singer", SQL: "SELECT count(*) FROM singer", Difficulty: "easy"},
		{ID: "bird-0001", Index: 1, DBID: "california_schools", SQL: `SELECT "Free Meal Count (K-12)" FROM frpm WHERE x = 'a\b' AND y < 3 & 4`},
		{ID: "x-2", Index: 1 << 40, DBID: "d", SQL: "SELECT 'é', '\u2028', '\U0001F600'", Difficulty: "challenging"},
	}
	var buf bytes.Buffer
	if err := Write(&buf, gs); err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n")) {
		var got Gold
		if !readLine(line, &got) {
			t.Fatalf("line %d not read fast: %s", i, line)
		}
		if diff := cmp.Diff(gs[i], got); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", i, diff)
		}
	}
	back, err := Parse("written", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(gs, back); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

// TestReadLineLeavesTheRest lists lines encoding/json reads (or refuses)
// that readLine must leave to it.
func TestReadLineLeavesTheRest(t *testing.T) {
	for _, line := range []string{
		`{"id":"a","index":1,"db_id":"d","sql":"s"} `,
		`{"id":"a", "index":1,"db_id":"d","sql":"s"}`,
		`{"db_id":"d","id":"a","index":1,"sql":"s"}`,
		`{"ID":"a","index":1,"db_id":"d","sql":"s"}`,
		`{"id":"a","index":1.0,"db_id":"d","sql":"s"}`,
		`{"id":"a","index":1e2,"db_id":"d","sql":"s"}`,
		`{"id":"a","index":99999999999999999999,"db_id":"d","sql":"s"}`,
		`{"id":null,"index":1,"db_id":"d","sql":"s"}`,
		`{"id":"a","index":1,"db_id":"d","sql":"s","difficulty":null}`,
		`{"id":"a","index":1,"db_id":"d","sql":"s","extra":1}`,
		`{"id":"a","index":1,"db_id":"d","sql":"s","difficulty":"e","difficulty":"f"}`,
		`{"id":"a","index":1,"db_id":"d","sql":"s"}{}`,
	} {
		var g Gold
		if readLine([]byte(line), &g) {
			t.Errorf("readLine took %s", line)
		}
		if diff := cmp.Diff(Gold{}, g); diff != "" {
			t.Errorf("readLine changed its value on %s:\n%s", line, diff)
		}
	}
}

// FuzzReadLine checks that every line readLine takes is one encoding/json
// reads, strictly and whole, to the same Gold.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte(`{"id":"spider-0000","index":0,"db_id":"concert_singer","sql":"SELECT count(*) FROM singer","difficulty":"easy"}`))
	f.Add([]byte(`{"id":"a\"b","index":-3,"db_id":"\u00e9","sql":"\\n"}`))
	f.Add([]byte(`{"id":"a","index":1,"db_id":"d","sql":"s","difficulty":""}`))
	var buf bytes.Buffer
	if err := Write(&buf, []Gold{{ID: "bird-0001", Index: 1, DBID: "d", SQL: "SELECT \"a\" FROM t WHERE b = 'c' AND x < 1 & 2"}}); err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Gold
		if !readLine(line, &fast) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var slow Gold
		if err := dec.Decode(&slow); err != nil {
			t.Fatalf("readLine took %q, which encoding/json refuses: %v", line, err)
		}
		if dec.InputOffset() != int64(len(line)) {
			t.Fatalf("readLine took %q, whose value ends at %d", line, dec.InputOffset())
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("readLine read %q otherwise (-encoding/json +readLine):\n%s", line, diff)
		}
	})
}
