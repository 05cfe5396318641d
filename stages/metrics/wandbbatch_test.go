package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/metrics/trackertest"
)

// decodeSerialAndBatched decodes the records of raw, a run-*.wandb file,
// one by one (serialDecoder) and in parsed batches (wandbBatches), and
// fails t where the two leave anything different: points, stats, cursor,
// run description, error. It returns the serial decode's points.
func decodeSerialAndBatched(t *testing.T, raw []byte) []Point {
	t.Helper()
	decode := func(newDecoder func(*Tailer) framedDecoder) (*Tailer, string) {
		tl := &Tailer{path: "run-x.wandb", format: FormatWandB, run: &TrackerRun{Tracker: FormatWandB}, cur: Cursor{Offset: llogHeaderLen}}
		d := newDecoder(tl)
		r := llogReader{data: raw, off: llogHeaderLen}
		for n := 0; n <= len(raw); n++ {
			rec, err := r.next()
			if err != nil {
				break
			}
			if err := d.add(rec, r.off); err != nil {
				return tl, err.Error()
			}
		}
		if err := d.drain(); err != nil {
			return tl, err.Error()
		}
		return tl, ""
	}
	s, serr := decode(func(t *Tailer) framedDecoder { return serialDecoder{t} })
	b, berr := decode(func(t *Tailer) framedDecoder { return &wandbBatches{t: t} })
	if serr != berr {
		t.Fatalf("error: serial %q, batched %q", serr, berr)
	}
	if !pointsEqual(s.sk.out, b.sk.out) {
		t.Fatalf("points: serial %d, batched %d, or their values differ", len(s.sk.out), len(b.sk.out))
	}
	if d := cmp.Diff(s.sk.stats, b.sk.stats); d != "" {
		t.Fatalf("stats (-serial +batched):\n%s", d)
	}
	if s.cur != b.cur {
		t.Fatalf("cursor: serial %+v, batched %+v", s.cur, b.cur)
	}
	if d := cmp.Diff(s.run, b.run); d != "" {
		t.Fatalf("run (-serial +batched):\n%s", d)
	}
	return s.sk.out
}

// TestWandBBatchesDecodeAsSerial: a W&B run parsed in batches on several
// goroutines decodes to exactly what a record-by-record decode gives, for
// the shipped real runs, a generated run of several batches with nested
// keys and values that are not numbers, and one whose row in the middle
// has a _step that is not an integer (the error, and the points and
// cursor before it, must be the same).
func TestWandBBatchesDecodeAsSerial(t *testing.T) {
	for _, c := range []struct {
		path   string
		points bool
	}{
		{"wandb/coati-rlhf-0.14.2/wandb/run-20230420_073822-clnzftry/run-clnzftry.wandb", true},
		{"wandb/coati-rlhf-0.14.2/wandb/run-20230421_071132-ts6cnbxo/run-ts6cnbxo.wandb", true},
		// Cut off mid-record, before its first history row.
		{"wandb/coati-rlhf-0.14.2/wandb/offline-run-20230413_090116-iotz2fip/run-iotz2fip.wandb", false},
	} {
		raw, err := os.ReadFile(filepath.Join(trackerFixtures, c.path))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			if pts := decodeSerialAndBatched(t, raw); (len(pts) > 0) != c.points {
				t.Errorf("%d points read", len(pts))
			}
		})
	}
	generated := func(badStepAt int) []byte {
		w := trackertest.NewWandB()
		for s := range 6000 {
			items := []trackertest.Item{
				{NestedKey: []string{"actor", "lr"}, JSON: trackertest.Float(float64(s) / 3)},
				{Key: "note", JSON: `"text"`},
			}
			for k := range 20 {
				items = append(items, trackertest.Item{Key: fmt.Sprintf("train/metric_%02d", k), JSON: trackertest.Float(float64(s)*1.000123 + float64(k)/7)})
			}
			if s == badStepAt {
				items = append(items, trackertest.Item{Key: "_step", JSON: `"x"`})
			}
			w.Record(trackertest.History(int64(s), items...))
		}
		w.Record(trackertest.Exit(0))
		return w.B
	}
	t.Run("generated", func(t *testing.T) {
		raw := generated(-1)
		if len(raw) < 4*batchBytes {
			t.Fatalf("the run is %d bytes, fewer than 4 batches", len(raw))
		}
		if pts := decodeSerialAndBatched(t, raw); len(pts) != 6000*21 {
			t.Errorf("%d points, want %d", len(pts), 6000*21)
		}
	})
	t.Run("a bad _step in the middle", func(t *testing.T) {
		if pts := decodeSerialAndBatched(t, generated(3000)); len(pts) != 3000*21 {
			t.Errorf("%d points before the bad row, want %d", len(pts), 3000*21)
		}
	})
}
