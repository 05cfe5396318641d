package ledger_test

import (
	"database/sql"
	"github.com/rlgate/rlgate/ledger/records"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rlgate/rlgate/ledger"
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

// TestMetricsTableOfVersion1Rebuilt: a ledger whose metrics table is
// derived version 1's (WITHOUT ROWID, each row's packed points inside its
// b-tree's keys) gets this version's on open, with the same rows, and
// verifies clean.
func TestMetricsTableOfVersion1Rebuilt(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	pts := []ledger.MetricPoint{{Step: 1, Key: "loss", Value: 2}, {Step: 1, Key: "lr", Value: 1e-6}, {Step: 2, Key: "loss", Value: 1.5}}
	if _, err := l.Append(ctx, ledger.Record{Kind: records.KindMetrics, Run: "rl", Body: ledger.Metrics{Points: pts}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	rawExec(t, dir, `ALTER TABLE metrics RENAME TO metrics_now`)
	rawExec(t, dir, `CREATE TABLE metrics (
	run   TEXT NOT NULL,
	key   TEXT NOT NULL,
	seq   INTEGER NOT NULL,
	n     INTEGER NOT NULL,
	steps BLOB NOT NULL,
	vals  BLOB NOT NULL,
	PRIMARY KEY (run, key, seq)
) WITHOUT ROWID`)
	rawExec(t, dir, `INSERT INTO metrics SELECT run, key, seq, n, steps, vals FROM metrics_now`)
	rawExec(t, dir, `DROP TABLE metrics_now`)
	rawExec(t, dir, `UPDATE meta SET value = '1' WHERE key = 'derived_version'`)

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
	if strings.Contains(ddl, "WITHOUT ROWID") {
		t.Errorf("metrics after open is still version 1's:\n%s", ddl)
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
