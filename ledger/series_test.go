package ledger_test

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// TestSeriesOfIrregularBatches appends metrics batches whose steps log
// keys in changing orders and subsets, with keys that first appear mid-batch
// and keys logged twice in a step, and checks that every key's series reads
// back as the batches hold it: the derived rows group a batch's points by
// key guessing that each step repeats the previous one's order, and a wrong
// guess must cost time only; the two last batches, appended together, are
// large enough to be packed in a buffer the deriver reuses. A checked
// view, which decodes the entries and parses a key's values only when the
// key is asked for, reads the same series.
func TestSeriesOfIrregularBatches(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{"loss", "lr", "reward/mean", "kl", "grad_norm", "late/only"}
	type point struct {
		Step  int64
		Value float64
		Seq   int64
	}
	want := map[string][]point{}
	var large []ledger.Record
	step := int64(0)
	for batch := range 6 {
		var pts []ledger.MetricPoint
		steps := 40
		if batch >= 4 {
			steps = 3000 // over 256 KiB packed: rows go through the deriver's reused buffer
		}
		for range steps {
			step += int64(rng.IntN(3)) // some steps are logged twice
			order := slices.Clone(keys[:len(keys)-1])
			if batch >= 3 {
				order = slices.Clone(keys) // a key that first appears in a later batch
			}
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			if batch < 4 {
				order = order[:1+rng.IntN(len(order))]
			}
			if rng.IntN(5) == 0 {
				order = append(order, order[0]) // a key twice in a step
			}
			for _, k := range order {
				v := rng.NormFloat64()
				if rng.IntN(10) == 0 {
					v = math.NaN()
				}
				pts = append(pts, ledger.MetricPoint{Step: step, Key: k, Value: v})
			}
		}
		rec := ledger.Record{Kind: records.KindMetrics, Run: "rl", Body: ledger.Metrics{Points: pts}}
		if batch >= 4 {
			large = append(large, rec) // appended together, through one deriver
			continue
		}
		es, err := l.Append(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			want[p.Key] = append(want[p.Key], point{p.Step, p.Value, es[0].Seq})
		}
	}
	es, err := l.Append(ctx, large...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range large {
		for _, p := range r.Body.(ledger.Metrics).Points {
			want[p.Key] = append(want[p.Key], point{p.Step, p.Value, es[i].Seq})
		}
	}
	c, err := openChecked(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		// Series orders by step, keeping ledger order within a step.
		slices.SortStableFunc(want[k], func(a, b point) int { return int(a.Step - b.Step) })
		for name, l := range map[string]*ledger.Ledger{"the derived rows": l, "a checked view": c} {
			pts, seqs, err := l.Series(ctx, "rl", k)
			if err != nil {
				t.Fatal(err)
			}
			var got []point
			for i, p := range pts {
				if p.Key != k {
					t.Fatalf("%s: series %s holds a point of key %s", name, k, p.Key)
				}
				got = append(got, point{p.Step, p.Value, seqs[i]})
			}
			if diff := cmp.Diff(want[k], got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("%s: series %s (-appended +read):\n%s", name, k, diff)
			}
		}
	}
}

// TestMetricsTableOfEarlierVersionsRebuilt: a ledger whose metrics table
// is derived version 1's (WITHOUT ROWID, each row's packed points inside
// its b-tree's keys) or version 2's (steps as 8-byte integers) gets this
// version's on open, with the same series, and verifies clean.
func TestMetricsTableOfEarlierVersionsRebuilt(t *testing.T) {
	for _, c := range []struct {
		version, options string
	}{{"1", " WITHOUT ROWID"}, {"2", ""}} {
		t.Run("version "+c.version, func(t *testing.T) { metricsTableRebuilt(t, c.version, c.options) })
	}
}

func metricsTableRebuilt(t *testing.T, version, options string) {
	dir := t.TempDir()
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	pts := []ledger.MetricPoint{{Step: 1, Key: "loss", Value: 2}, {Step: 1, Key: "lr", Value: 1e-6}, {Step: 2, Key: "loss", Value: 1.5}}
	e, err := l.Append(ctx, ledger.Record{Kind: records.KindMetrics, Run: "rl", Body: ledger.Metrics{Points: pts}})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	// The rows as that version held them: steps and values little-endian.
	packed := func(vs ...float64) string {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return fmt.Sprintf("x'%x'", b)
	}
	steps := func(ss ...int64) string {
		var b []byte
		for _, s := range ss {
			b = binary.LittleEndian.AppendUint64(b, uint64(s))
		}
		return fmt.Sprintf("x'%x'", b)
	}
	seq := e[0].Seq
	rawExec(t, dir, `DROP TABLE metrics`)
	rawExec(t, dir, `CREATE TABLE metrics (
	run   TEXT NOT NULL,
	key   TEXT NOT NULL,
	seq   INTEGER NOT NULL,
	n     INTEGER NOT NULL,
	steps BLOB NOT NULL,
	vals  BLOB NOT NULL,
	PRIMARY KEY (run, key, seq)
)`+options)
	rawExec(t, dir, fmt.Sprintf(`INSERT INTO metrics VALUES ('rl', 'loss', %d, 2, %s, %s), ('rl', 'lr', %d, 1, %s, %s)`,
		seq, steps(1, 2), packed(2, 1.5), seq, steps(1), packed(1e-6)))
	rawExec(t, dir, `UPDATE meta SET value = '`+version+`' WHERE key = 'derived_version'`)

	if rep := verifyDir(t, dir, ledger.VerifyOptions{}); !rep.OK() {
		t.Fatalf("open should have rebuilt the derived tables:\n%s", findings(rep))
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ddl string
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'metrics'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ddl, "WITHOUT ROWID") || !strings.Contains(ddl, "step_deltas") {
		t.Errorf("metrics after open is still version %s's:\n%s", version, ddl)
	}
	l, err = ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, _, err := l.Series(ctx, "rl", "loss")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ledger.MetricPoint{pts[0], pts[2]}, got); diff != "" {
		t.Errorf("series loss after the rebuild (-appended +read):\n%s", diff)
	}
}

// TestSeriesRefusesDamagedRows: a metrics row whose step deltas do not
// decode to its n steps (a varint cut short) or whose values are not n
// long is refused by Series, naming the entry, rather than read.
func TestSeriesRefusesDamagedRows(t *testing.T) {
	for _, edit := range []string{`UPDATE metrics SET step_deltas = x'ff'`, `UPDATE metrics SET step_deltas = x'0202'`, `UPDATE metrics SET vals = zeroblob(8)`} {
		dir := t.TempDir()
		l, err := ledger.Init(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		pts := []ledger.MetricPoint{{Step: 1, Key: "loss", Value: 2}, {Step: 2, Key: "loss", Value: 1.5}, {Step: 3, Key: "loss", Value: 1}}
		if _, err := l.Append(ctx, ledger.Record{Kind: records.KindMetrics, Run: "rl", Body: ledger.PackMetrics(pts)}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		rawExec(t, dir, edit)
		l, err = ledger.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.Series(ctx, "rl", "loss"); err == nil || !strings.Contains(err.Error(), "packed row is damaged (run rlgate verify)") {
			t.Errorf("%s: Series gave %v, want the row refused", edit, err)
		}
		l.Close()
	}
}
