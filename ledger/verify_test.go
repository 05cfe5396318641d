package ledger_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// tamperFixture builds a ledger of 10 entries, each naming its own blob,
// plus a run with metrics, and returns it closed.
func tamperFixture(t *testing.T) (dir string, blobs []ledger.Digest) {
	dir = t.TempDir()
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 10 {
		d, err := l.PutBlobBytes([]byte(fmt.Sprintf("blob %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, d)
		if _, err := l.Append(ctx, ledger.Record{Kind: "log", Run: "r1", Body: map[string]int{"i": i}, Blobs: []ledger.Digest{d}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.Append(ctx,
		ledger.Record{Kind: ledger.KindRunStart, Run: "r1", Body: ledger.RunStart{Stage: "rl"}},
		ledger.Record{Kind: ledger.KindMetrics, Run: "r1", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: 1, Key: "reward", Value: 0.25}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return dir, blobs
}

func verifyDir(t *testing.T, dir string, opts ledger.VerifyOptions) *ledger.VerifyReport {
	t.Helper()
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := l.Verify(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string, blobs []ledger.Digest)
		// want lists findings that must be present: check, seq (0 = any)
		// or digest, and a fragment of the message.
		want []ledger.Finding
	}{
		{"entry body byte flipped in SQLite", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE entries SET body = '{"i":7}' WHERE seq = 5`)
		}, []ledger.Finding{{Check: "chain", Seq: 5, Message: "content does not match its hash"}}},
		{"entry kind edited", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE entries SET kind = 'lag' WHERE seq = 3`)
		}, []ledger.Finding{{Check: "chain", Seq: 3, Message: "content does not match"}}},
		{"blob byte flipped", func(t *testing.T, dir string, blobs []ledger.Digest) {
			flipByte(t, filepath.Join(dir, "blobs", blobs[4].Hex()[:2], blobs[4].Hex()), 2)
		}, []ledger.Finding{{Check: "blob", Digest: "", Message: "content hashes to"}}},
		{"blob deleted", func(t *testing.T, dir string, blobs []ledger.Digest) {
			os.Remove(filepath.Join(dir, "blobs", blobs[6].Hex()[:2], blobs[6].Hex()))
		}, []ledger.Finding{{Check: "blob", Message: "missing (named by entry 8)"}}},
		{"middle entry deleted", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `DELETE FROM entries WHERE seq = 6`)
		}, []ledger.Finding{{Check: "chain", Seq: 6, Message: "entry is missing"}, {Check: "derived", Message: "table blob_refs"}}},
		{"derived row edited", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE metrics SET vals = zeroblob(8)`)
		}, []ledger.Finding{{Check: "derived", Message: "table metrics row 1"}}},
		{"whole entry rewritten with a recomputed hash", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE entries SET hash = '`+strings.Repeat("ab", 32)+`' WHERE seq = 4`)
		}, []ledger.Finding{{Check: "chain", Seq: 4, Message: "content does not match"}, {Check: "chain", Seq: 5, Message: "does not match the hash of entry 4"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, blobs := tamperFixture(t)
			if rep := verifyDir(t, dir, ledger.VerifyOptions{}); !rep.OK() || rep.Entries != 13 {
				t.Fatalf("fixture not clean: %+v", rep)
			}
			tt.tamper(t, dir, blobs)
			rep := verifyDir(t, dir, ledger.VerifyOptions{})
			if rep.OK() {
				t.Fatal("verify found nothing")
			}
			for _, w := range tt.want {
				found := false
				for _, f := range rep.Findings {
					if f.Severity == ledger.SeverityError && f.Check == w.Check && (w.Seq == 0 || f.Seq == w.Seq) && strings.Contains(f.Message, w.Message) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing finding %+v; got:\n%s", w, findings(rep))
				}
			}
			if tt.name == "blob byte flipped" && !strings.Contains(findings(rep), blobs[4].String()) {
				t.Errorf("blob finding does not name the digest %s:\n%s", blobs[4], findings(rep))
			}
		})
	}
}

func TestVerifyNotesAndHead(t *testing.T) {
	dir, _ := tamperFixture(t)
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := l.Head(ctx)
	if _, err := l.PutBlobBytes([]byte("orphan")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	rep := verifyDir(t, dir, ledger.VerifyOptions{Against: &head})
	if !rep.OK() || rep.Notes != 1 || !strings.Contains(findings(rep), "no entry names this blob") {
		t.Errorf("an unreferenced blob must be a note, not an error:\n%s", findings(rep))
	}
	// Cutting the tail is invisible to the chain itself; a printed head catches it.
	rawExec(t, dir, `DELETE FROM entries WHERE seq >= 12`)
	rawExec(t, dir, `DELETE FROM metrics`)
	rawExec(t, dir, `DELETE FROM runs`)
	if rep := verifyDir(t, dir, ledger.VerifyOptions{}); !rep.OK() {
		t.Fatalf("truncated ledger should verify on its own:\n%s", findings(rep))
	}
	rep = verifyDir(t, dir, ledger.VerifyOptions{Against: &head})
	if rep.OK() || !strings.Contains(findings(rep), "tail was cut off") {
		t.Errorf("truncation against a printed head not detected:\n%s", findings(rep))
	}
}

func findings(rep *ledger.VerifyReport) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}
