package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// copySource makes a ledger of a run with artifacts, metrics and outcomes
// whose blobs are real files (Spider databases, trainer logs): 1 + 6*n
// entries in all, run i in entries 2+6i to 7+6i.
func copySource(t *testing.T, n int) *ledger.Ledger {
	t.Helper()
	l := ledgertest.New(t)
	files := []string{
		"../testdata/spider/database/concert_singer/concert_singer.sqlite",
		"../testdata/trainer-logs/llamafactory-trainer_log.jsonl",
		"../testdata/trainer-logs/skyrl-console.log",
		"../testdata/safetensors/b.safetensors",
	}
	for i := range n {
		run := "rl" + strconv.Itoa(i)
		b, err := os.ReadFile(files[i%len(files)])
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.PutBlobBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		// A blob of its own per run, so each batch has some to copy.
		own, err := l.PutBlobBytes(append(b, run...))
		if err != nil {
			t.Fatal(err)
		}
		// Metrics bodies of both versions: even runs' as ingestion writes them now.
		pts := []ledger.MetricPoint{{Step: 1, Key: "reward", Value: 0.25}, {Step: 2, Key: "reward", Value: 0.5}}
		var metricsBody any = ledger.Metrics{Points: pts}
		if i%2 == 0 {
			metricsBody = ledger.PackMetrics(pts)
		}
		recs := []ledger.Record{
			{Kind: records.KindRunStart, Run: run, Body: ledger.RunStart{Stage: "rl"}},
			{Kind: records.KindArtifact, Run: run, Body: ledger.Artifact{Role: "input", Name: "data", Kind: "file", Digest: d}, Blobs: []ledger.Digest{d}},
			{Kind: "log", Run: run, Body: map[string]any{"stream": "stdout", "offset": 0, "bytes": len(b) + len(run)}, Blobs: []ledger.Digest{own}},
			{Kind: records.KindMetrics, Run: run, Body: metricsBody},
			{Kind: records.KindOutcomes, Run: run, Body: ledger.Outcomes{Items: []ledger.Outcome{{TaskID: "spider-dev-" + strconv.Itoa(i), Sample: 0, Correct: i%2 == 0}}}},
			{Kind: records.KindRunEnd, Run: run, Body: ledger.RunEnd{Status: "ok"}},
		}
		if _, err := l.Append(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// copyCheck opens the copy in dir, verifies it, and checks that it holds
// exactly src's entries, derived runs and head.
func copyCheck(t *testing.T, src *ledger.Ledger, dir string) ledger.Head {
	t.Helper()
	dst, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ledgertest.Check(t, dst)
	if diff := cmp.Diff(copyEntries(t, src), copyEntries(t, dst)); diff != "" {
		t.Errorf("entries differ (-source +copy):\n%s", diff)
	}
	wantRuns, err := src.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotRuns, err := dst.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantRuns, gotRuns); diff != "" {
		t.Errorf("derived runs differ (-source +copy):\n%s", diff)
	}
	want, _ := src.Head(ctx)
	got, _ := dst.Head(ctx)
	if got != want {
		t.Errorf("copy's head %s, source's %s", got, want)
	}
	return got
}

func copyEntries(t *testing.T, l *ledger.Ledger) []ledger.Entry {
	t.Helper()
	var out []ledger.Entry
	for e, err := range l.Entries(ctx, ledger.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestCopyRoundTripAndIncremental: a copy into a new directory holds the
// source's entries byte for byte and verifies; a second copy copies
// nothing, and one after more appends only the new entries and blobs.
func TestCopyRoundTripAndIncremental(t *testing.T) {
	src := copySource(t, 4)
	dir := filepath.Join(t.TempDir(), "copy")
	res, err := ledger.Copy(ctx, src, dir, ledger.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	head := copyCheck(t, src, dir)
	want := &ledger.CopyResult{From: src.Dir(), To: dir, Created: true, Entries: 25, Blobs: 8, BlobBytes: res.BlobBytes, Head: head}
	if diff := cmp.Diff(want, res); diff != "" || res.BlobBytes == 0 {
		t.Errorf("first copy (-want +got):\n%s", diff)
	}

	res, err = ledger.Copy(ctx, src, dir, ledger.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&ledger.CopyResult{From: src.Dir(), To: dir, Head: head}, res); diff != "" {
		t.Errorf("second copy (-want +got):\n%s", diff)
	}

	b := []byte("a new log chunk\n")
	d, err := src.PutBlobBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Append(ctx, ledger.Record{Kind: "log", Run: "rl0", Body: map[string]any{"stream": "stderr"}, Blobs: []ledger.Digest{d}},
		ledger.Record{Kind: records.KindRunStart, Run: "eval1", Body: ledger.RunStart{Stage: "eval"}}); err != nil {
		t.Fatal(err)
	}
	res, err = ledger.Copy(ctx, src, dir, ledger.CopyOptions{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	head = copyCheck(t, src, dir)
	if diff := cmp.Diff(&ledger.CopyResult{From: src.Dir(), To: dir, Entries: 2, Blobs: 1, BlobBytes: int64(len(b)), Head: head}, res); diff != "" {
		t.Errorf("copy after two appends (-want +got):\n%s", diff)
	}

	// A copy of the copy is the same ledger again.
	again := filepath.Join(t.TempDir(), "copy2")
	if _, err := ledger.Copy(ctx, src, again, ledger.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	copyCheck(t, src, again)
}

// TestCopyInterruptedResumes: cancelled after any batch, or before the
// first, a copy leaves a destination that verifies clean, holds a prefix
// of the source, and a second copy completes.
func TestCopyInterruptedResumes(t *testing.T) {
	src := copySource(t, 3) // 19 entries
	const batch = 4
	for stopAt := int64(0); stopAt <= 16; stopAt += batch {
		dir := filepath.Join(t.TempDir(), "copy")
		cctx, cancel := context.WithCancel(ctx)
		_, err := ledger.Copy(cctx, src, dir, ledger.CopyOptions{Batch: batch, Progress: func(copied, total int64) {
			if copied >= stopAt {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at %d: %v, want context.Canceled", stopAt, err)
		}
		dst, err := ledger.OpenReadOnly(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		ledgertest.Check(t, dst)
		head, err := dst.Head(ctx)
		dst.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + stopAt; head.Seq != want {
			t.Errorf("stopped at %d: copy's head is entry %d, want %d", stopAt, head.Seq, want)
		}
		res, err := ledger.Copy(ctx, src, dir, ledger.CopyOptions{Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		if res.Entries != 19-head.Seq || res.Created {
			t.Errorf("stopped at %d: the resumed copy copied %d entries (created %v), want %d", stopAt, res.Entries, res.Created, 19-head.Seq)
		}
		copyCheck(t, src, dir)
	}
}

// TestCopyRefuses: a destination that diverged, holds another ledger or
// is ahead of the source, and a source with a missing blob or an edited
// entry, are refused with the seq or blob named; the destination is left
// whole.
func TestCopyRefuses(t *testing.T) {
	t.Run("diverged", func(t *testing.T) {
		src := copySource(t, 1) // 7 entries
		dir := filepath.Join(t.TempDir(), "copy")
		if _, err := ledger.Copy(ctx, src, dir, ledger.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		dst, err := ledger.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		for _, l := range []*ledger.Ledger{src, dst} {
			if _, err := l.Append(ctx, ledger.Record{Kind: "note", Body: map[string]string{"by": l.Dir()}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := src.Append(ctx, ledger.Record{Kind: "note", Body: map[string]string{"more": "yes"}}); err != nil {
			t.Fatal(err)
		}
		_, err = ledger.Copy(ctx, src, dir, ledger.CopyOptions{})
		if !errors.Is(err, ledger.ErrDiverged) || !strings.Contains(err.Error(), "diverged at seq 8") {
			t.Errorf("got %v, want ErrDiverged at seq 8", err)
		}
	})
	t.Run("another ledger", func(t *testing.T) {
		src := copySource(t, 1)
		other := ledgertest.New(t)
		_, err := ledger.Copy(ctx, src, other.Dir(), ledger.CopyOptions{})
		if !errors.Is(err, ledger.ErrDiverged) || !strings.Contains(err.Error(), "holds ledger "+other.ID()) {
			t.Errorf("got %v, want ErrDiverged naming ledger %s", err, other.ID())
		}
	})
	t.Run("destination ahead", func(t *testing.T) {
		src := copySource(t, 1)
		dir := filepath.Join(t.TempDir(), "copy")
		if _, err := ledger.Copy(ctx, src, dir, ledger.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		dst, err := ledger.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dst.Append(ctx, ledger.Record{Kind: "note", Body: map[string]string{}})
		dst.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ledger.Copy(ctx, src, dir, ledger.CopyOptions{}); !errors.Is(err, ledger.ErrDestinationAhead) {
			t.Errorf("got %v, want ErrDestinationAhead", err)
		}
	})
	t.Run("missing blob", func(t *testing.T) {
		src := copySource(t, 3)
		gone := copyEntries(t, src)[8].Blobs[0] // entry 9: the second run's artifact
		b, err := src.ReadBlob(gone)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(src.Dir(), "blobs", gone.Hex()[:2], gone.Hex())
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile(path, b, 0o444) }) // for ledgertest's verify of the source
		dir := filepath.Join(t.TempDir(), "copy")
		_, err = ledger.Copy(ctx, src, dir, ledger.CopyOptions{Batch: 4})
		if !errors.Is(err, ledger.ErrBlobMissing) || !strings.Contains(err.Error(), gone.String()) || !strings.Contains(err.Error(), "named by entry 9") {
			t.Errorf("got %v, want ErrBlobMissing naming %s and entry 9", err, gone)
		}
		copyCheckPrefix(t, dir, 5)
	})
	t.Run("edited entry", func(t *testing.T) {
		src := copySource(t, 3)
		dir := filepath.Join(t.TempDir(), "copy")
		srcDir := src.Dir()
		db, err := sql.Open("sqlite", filepath.Join(srcDir, "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE entries SET body = replace(body, '0.5', '0.75') WHERE seq = 11`); err != nil {
			t.Fatal(err)
		}
		_, err = ledger.Copy(ctx, src, dir, ledger.CopyOptions{Batch: 4})
		if err == nil || !strings.Contains(err.Error(), "entry 11 does not match its hash") {
			t.Errorf("got %v, want entry 11 refused", err)
		}
		copyCheckPrefix(t, dir, 9)
		db.Exec(`UPDATE entries SET body = replace(body, '0.75', '0.5') WHERE seq = 11`) // for ledgertest's verify of the source
	})
}

// copyCheckPrefix checks that the interrupted copy in dir verifies clean
// and ends at entry seq.
func copyCheckPrefix(t *testing.T, dir string, seq int64) {
	t.Helper()
	dst, err := ledger.OpenReadOnly(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ledgertest.Check(t, dst)
	if head, _ := dst.Head(ctx); head.Seq != seq {
		t.Errorf("the copy's head is entry %d, want %d", head.Seq, seq)
	}
}
