package metrics

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rlgate/rlgate/stages/metrics/trackertest"
)

// wandbRun writes a W&B record file of rows history rows (loss, nested
// actor/lr, and every tenth row a 40 KB string, which spans blocks and is
// skipped) ending with exit code -1, and returns it with the points it holds.
func wandbRun(rows int) ([]byte, []Point) {
	b, want := wandbRows(rows)
	w := trackertest.Writer{B: b}
	w.Record(trackertest.Exit(-1))
	return w.B, want
}

// wandbRows is wandbRun without the exit record.
func wandbRows(rows int) ([]byte, []Point) {
	w := trackertest.NewWandB()
	var want []Point
	big := `"` + strings.Repeat("x", 40000) + `"`
	// Row 0's string is sized so that the row ends 3 bytes before the end
	// of the first block: the next chunk starts after zero padding.
	var first []byte
	for n := 32000; ; {
		first = trackertest.History(0, trackertest.Item{Key: "loss", JSON: "1"},
			trackertest.Item{NestedKey: []string{"actor", "lr"}, JSON: "0"},
			trackertest.Item{Key: "sample", JSON: `"` + strings.Repeat("x", n) + `"`})
		end := len(w.B) + llogChunkLen + len(first)
		if end == llogBlockLen-3 {
			break
		}
		n += llogBlockLen - 3 - end // the varint lengths settle in a step or two
	}
	for s := range rows {
		loss, lr := 1/float64(s+1), float64(s)*1e-7
		items := []trackertest.Item{
			{Key: "loss", JSON: trackertest.Float(loss)},
			{NestedKey: []string{"actor", "lr"}, JSON: trackertest.Float(lr)},
		}
		switch {
		case s == 0:
			w.Record(first)
		case s%10 == 0:
			items = append(items, trackertest.Item{Key: "sample", JSON: big})
			fallthrough
		default:
			w.Record(trackertest.History(int64(2*s), items...))
		}
		want = append(want, Point{Step: int64(2 * s), Key: "loss", Value: loss}, Point{Step: int64(2 * s), Key: "actor/lr", Value: lr})
	}
	return w.B, want
}

// TestWandBFramingAndRecords reads a file of the W&B framing written by an
// independent writer: records split across blocks, block padding, nested
// keys joined with "/", a string value skipped, steps from _step, and a
// negative exit code, which is failed.
func TestWandBFramingAndRecords(t *testing.T) {
	b, want := wandbRun(60)
	if len(b) < 3*llogBlockLen {
		t.Fatalf("%d bytes: the test needs records across several blocks", len(b))
	}
	path := filepath.Join(t.TempDir(), "run-x.wandb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tl, err := NewTailer(path, Options{}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tl.Final()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("points (-want +got):\n%s", d)
	}
	r := tl.Run()
	if r.Status != "failed" || r.OK || r.ExitCode == nil || *r.ExitCode != -1 || len(r.Findings) > 0 {
		t.Errorf("run: status %q ok %v exit %v findings %q; want failed, exit -1", r.Status, r.OK, r.ExitCode, r.Findings)
	}
	if s := tl.Stats(); s.Skipped != 6 || s.Records != 60 {
		t.Errorf("stats %+v, want 6 skipped strings and 60 rows", s)
	}
}

// TestWandBTailGrowingFile appends a W&B file a few bytes at a time, as
// the writer does: every read returns only whole records, a Tailer resumed
// from a saved cursor continues where the last one stopped, and the points
// come out exactly once.
func TestWandBTailGrowingFile(t *testing.T) {
	b, want := wandbRun(40)
	path := filepath.Join(t.TempDir(), "run-x.wandb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tl, err := NewTailer(path, Options{Format: FormatWandB}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	var got []Point
	for off, step := 0, 5003; off < len(b); off += step {
		if _, err := f.Write(b[off:min(off+step, len(b))]); err != nil {
			t.Fatal(err)
		}
		pts, err := tl.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pts...)
		if off > len(b)/2 && off-step <= len(b)/2 {
			// The recorder restarts from its saved cursor.
			if tl, err = NewTailer(path, Options{Format: FormatWandB}, tl.Cursor()); err != nil {
				t.Fatal(err)
			}
		}
	}
	pts, err := tl.Final()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, pts...)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("points (-want +got):\n%s", d)
	}
	if r := tl.Run(); r.Status != "failed" || len(r.Findings) > 0 {
		t.Errorf("run: status %q findings %q", r.Status, r.Findings)
	}
}

// TestWandBCorruptChunk: a flipped byte inside the file stops the read at
// that chunk; every record before it is kept and the damage is a finding
// naming the offset, not an error.
func TestWandBCorruptChunk(t *testing.T) {
	b, want := wandbRun(60)
	path := filepath.Join(t.TempDir(), "run-x.wandb")
	// Row 30 starts where a file of 30 rows ends (after block padding).
	prefix, _ := wandbRows(30)
	at := len(prefix)
	if left := llogBlockLen - at%llogBlockLen; left < llogChunkLen {
		at += left
	}
	b[at+llogChunkLen+3] ^= 0x40 // inside row 30's payload
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pts, _, err := ParseFile(path, Options{Format: FormatWandB})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want[:2*30], pts); d != "" {
		t.Fatalf("points (-want +got):\n%s", d)
	}
	tl, _ := NewTailer(path, Options{Format: FormatWandB}, Cursor{})
	tl.Final()
	if f := tl.Run().Findings; len(f) != 1 || !strings.Contains(f[0], "corrupt tail") || !strings.Contains(f[0], "checksum mismatch") {
		t.Errorf("findings %q, want one corrupt tail with a checksum mismatch", f)
	}
	if tl.Run().Status != "incomplete" || tl.Run().OK {
		t.Errorf("status %q: the exit record is past the damage", tl.Run().Status)
	}
}

// TestSwanLabProtobufVersionRefused: a backup.swanlab of a later version
// (protobuf records) is refused with a message that says so, not misread.
func TestSwanLabProtobufVersionRefused(t *testing.T) {
	w := trackertest.NewWriter(":SWL", 0xE1D6, 2)
	w.Record([]byte{0x08, 0x01})
	path := filepath.Join(t.TempDir(), "backup.swanlab")
	if err := os.WriteFile(path, w.B, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := ParseFile(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "version 2 holds protobuf records") || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("err = %v, want one line refusing version 2", err)
	}
}

// FuzzLLogRecords feeds arbitrary bytes to the W&B/SwanLab record framing
// and both record decoders, seeded with the real files: they must stop
// cleanly (a finding or an error, never a panic or a loop), and any payloads
// framed by the independent writer read back unchanged, whatever their
// size, across block boundaries.
func FuzzLLogRecords(f *testing.F) {
	for _, p := range []string{
		"wandb/coati-rlhf-0.14.2/wandb/run-20230421_071132-ts6cnbxo/run-ts6cnbxo.wandb",
		"wandb/coati-rlhf-0.14.2/wandb/offline-run-20230413_090116-iotz2fip/run-iotz2fip.wandb",
	} {
		b, err := os.ReadFile(filepath.Join(trackerFixtures, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte("x"), uint16(1))
	}
	b, err := os.ReadFile(filepath.Join(trackerFixtures, "swanlab/adsft-llamafactory-0.6.8/swanlog/run-20260531_190548-kd4v3b6ndym9m725v4d7q/backup.swanlab"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:8000], []byte(`{"model_type": "Scalar", "data": {}}`), uint16(40000))
	f.Fuzz(func(t *testing.T, raw, payload []byte, repeat uint16) {
		// decode reads raw's records into sk with fresh decoders.
		decode := func(sk *sink) {
			var run TrackerRun
			var wd wandbDecoder
			var sd swanDecoder
			r := llogReader{data: raw, off: llogHeaderLen}
			for n := 0; ; n++ {
				if n > len(raw) {
					t.Fatalf("%d records from %d bytes: the reader does not advance", n, len(raw))
				}
				rec, err := r.next()
				if err != nil {
					break
				}
				_ = wd.record(sk, &run, rec, nil)
				_ = sd.record(sk, &run, rec)
			}
		}
		var sk sink
		decode(&sk)
		// Parsed in batches on other goroutines, the W&B records decode
		// to the same points, stats, run and error.
		decodeSerialAndBatched(t, raw)
		// Streamed in chunks of 3 (Tailer.Stream), the same points arrive
		// in the same order.
		var streamed []Point
		chunked := sink{chunk: 3, flush: func(c []Point) {
			if len(c) != 3 {
				t.Fatalf("a chunk of %d points, want 3", len(c))
			}
			streamed = append(streamed, c...)
		}}
		decode(&chunked)
		if all := append(streamed, chunked.out...); !pointsEqual(sk.out, all) {
			t.Fatalf("streamed points differ: %d, whole %d", len(all), len(sk.out))
		}
		big := bytes.Repeat(payload, int(repeat)%50000/max(len(payload), 1)+1)
		w := trackertest.NewWandB()
		w.Record(payload)
		w.Record(big)
		r := llogReader{data: w.B, off: llogHeaderLen}
		for _, want := range [][]byte{payload, big} {
			got, err := r.next()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("round trip of %d bytes: %d bytes, %v", len(want), len(got), err)
			}
		}
		if _, err := r.next(); err != io.EOF {
			t.Fatalf("after the last record: %v, want io.EOF", err)
		}
	})
}

// FuzzMLflowLine: any metric line parses or fails with an error, and a
// line the parser accepts prints back to the same values.
func FuzzMLflowLine(f *testing.F) {
	f.Add([]byte("1664364007310 3.2727866172790527 0"))
	f.Add([]byte("1 nan"))
	f.Add([]byte("1 -inf 5"))
	f.Fuzz(func(t *testing.T, line []byte) {
		ts, v, step, err := parseMLflowLine(line)
		if err != nil {
			return
		}
		again := fmt.Sprintf("%d %s %d", ts, strconv.FormatFloat(v, 'g', -1, 64), step)
		ts2, v2, step2, err := parseMLflowLine([]byte(again))
		if err != nil || ts2 != ts || step2 != step || !(v2 == v || math.IsNaN(v) && math.IsNaN(v2)) {
			t.Fatalf("%q -> %q: %d %g %d, %v", line, again, ts2, v2, step2, err)
		}
	})
}

// TestWandBHistoryJSONL reads a pre-0.10 W&B run directory: rows of
// wandb-history.jsonl at their _step (nested dicts flattened with "/",
// strings skipped), the summary, config.yaml unwrapped (integer keys
// included, as W&B writes them), and the end state from
// wandb-metadata.json; without its exitcode the run is incomplete.
func TestWandBHistoryJSONL(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"wandb-history.jsonl": `{"_step": 0, "_runtime": 1.5, "loss": 0.9, "train": {"lr": 1e-06}, "note": "x"}` + "\n" +
			`{"_step": 1, "_runtime": 2.5, "loss": NaN, "train": {"lr": 2e-06}}` + "\n",
		"wandb-summary.json":  `{"loss": 0.5, "_step": 1}`,
		"config.yaml":         "wandb_version: 1\nlr:\n  desc: null\n  value: 1.0e-06\n_wandb:\n  desc: null\n  value:\n    t:\n      1: [1, 2]\n",
		"wandb-metadata.json": `{"state": "finished", "exitcode": 0, "startedAt": "2019-06-01T10:00:00.123456"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tl, err := NewTailer(dir, Options{}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := tl.Final()
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{0, "_runtime", 1.5}, {0, "loss", 0.9}, {0, "train/lr", 1e-6}, {1, "_runtime", 2.5}, {1, "loss", math.NaN()}, {1, "train/lr", 2e-6}}
	if d := cmp.Diff(want, pts, cmpopts.EquateNaNs()); d != "" {
		t.Fatalf("points (-want +got):\n%s", d)
	}
	r := tl.Run()
	got := map[string]any{"format": tl.Format(), "status": r.Status, "ok": r.OK, "start": r.Start.Format(time.RFC3339Nano),
		"summary": string(r.Summary["loss"]), "lr": string(r.Config["lr"]), "_wandb": string(r.Config["_wandb"]), "findings": len(r.Findings)}
	wantRun := map[string]any{"format": FormatWandB, "status": "finished", "ok": true, "start": "2019-06-01T10:00:00.123456Z",
		"summary": "0.5", "lr": "0.000001", "_wandb": `{"t":{"1":[1,2]}}`, "findings": 0}
	if d := cmp.Diff(wantRun, got); d != "" {
		t.Errorf("run (-want +got):\n%s", d)
	}
	os.Remove(filepath.Join(dir, "wandb-metadata.json"))
	tl, _ = NewTailer(dir, Options{Format: FormatWandB}, Cursor{})
	if _, err := tl.Final(); err != nil || tl.Run().Status != "incomplete" || tl.Run().OK {
		t.Errorf("without wandb-metadata.json: status %q ok %v err %v; want incomplete", tl.Run().Status, tl.Run().OK, err)
	}
}

// TestWandBReadInWindows reads a W&B file several times larger than the
// window readFramed reads at a time, with records across window ends and
// one record longer than a window: every point comes out once, as the
// whole file holds them; cut inside that long record, the file keeps every
// record before the cut and records a finding.
func TestWandBReadInWindows(t *testing.T) {
	b, want := wandbRows(600)
	w := trackertest.Writer{B: b}
	huge := `"` + strings.Repeat("y", 3*readChunk/2) + `"`
	cut := len(w.B) + readChunk // inside the long record
	w.Record(trackertest.History(5000, trackertest.Item{Key: "loss", JSON: "0.5"}, trackertest.Item{Key: "sample", JSON: huge}))
	w.Record(trackertest.History(5001, trackertest.Item{Key: "loss", JSON: "0.25"}))
	w.Record(trackertest.Exit(0))
	if len(w.B) < 3*readChunk {
		t.Fatalf("%d bytes: the test needs a file of several windows", len(w.B))
	}
	dir := t.TempDir()
	read := func(name string, b []byte) ([]Point, *TrackerRun) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tl, err := NewTailer(path, Options{Format: FormatWandB}, Cursor{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tl.Final()
		if err != nil {
			t.Fatal(err)
		}
		return got, tl.Run()
	}
	got, r := read("run-whole.wandb", w.B)
	whole := append(want[:len(want):len(want)], Point{Step: 5000, Key: "loss", Value: 0.5}, Point{Step: 5001, Key: "loss", Value: 0.25})
	if d := cmp.Diff(whole, got); d != "" {
		t.Fatalf("points (-want +got):\n%s", d)
	}
	if !r.OK || len(r.Findings) > 0 {
		t.Errorf("run: ok %v findings %q; want ok, no findings", r.OK, r.Findings)
	}
	got, r = read("run-cut.wandb", w.B[:cut])
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("cut file: points (-want +got):\n%s", d)
	}
	if r.OK || len(r.Findings) != 1 || !strings.Contains(r.Findings[0], "truncated tail") {
		t.Errorf("cut file: ok %v findings %q; want not ok and one truncated-tail finding", r.OK, r.Findings)
	}
}
