package ledger_test

import (
	"database/sql"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// tamperFixture returns a copy of a ledger of 10 entries, each naming its
// own blob, plus a run with metrics, closed. The ledger is built once per
// test binary through the real code (buildTamperFixture) and copied, file
// modes and all, for each test to tamper with: building it costs a dozen
// synced commits, copying it a few file writes.
func tamperFixture(t *testing.T) (dir string, blobs []ledger.Digest) {
	t.Helper()
	tamperOnce.Do(func() {
		tamperDir, tamperErr = os.MkdirTemp("", "rlgate-tamper-fixture-")
		if tamperErr == nil {
			tamperBlobs, tamperErr = buildTamperFixture(filepath.Join(tamperDir, "ledger"))
		}
	})
	if tamperErr != nil {
		t.Fatalf("build the tamper fixture: %v", tamperErr)
	}
	dir = filepath.Join(t.TempDir(), "ledger")
	if err := copyTree(filepath.Join(tamperDir, "ledger"), dir); err != nil {
		t.Fatal(err)
	}
	return dir, tamperBlobs
}

// The tamper fixture, built by the first tamperFixture call; TestMain
// removes tamperDir.
var (
	tamperOnce  sync.Once
	tamperDir   string
	tamperBlobs []ledger.Digest
	tamperErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tamperDir != "" {
		os.RemoveAll(tamperDir)
	}
	os.Exit(code)
}

// buildTamperFixture writes tamperFixture's ledger into dir.
func buildTamperFixture(dir string) (blobs []ledger.Digest, err error) {
	l, err := ledger.Init(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	for i := range 10 {
		d, err := l.PutBlobBytes([]byte(fmt.Sprintf("blob %d", i)))
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, d)
		if _, err := l.Append(ctx, ledger.Record{Kind: "log", Run: "r1", Body: map[string]int{"i": i}, Blobs: []ledger.Digest{d}}); err != nil {
			return nil, err
		}
	}
	_, err = l.Append(ctx,
		ledger.Record{Kind: records.KindRunStart, Run: "r1", Body: ledger.RunStart{Stage: "rl"}},
		ledger.Record{Kind: records.KindMetrics, Run: "r1", Body: ledger.Metrics{Points: []ledger.MetricPoint{{Step: 1, Key: "reward", Value: 0.25}}}},
	)
	if err != nil {
		return nil, err
	}
	return blobs, l.Close()
}

// copyTree copies the directory tree at src to dst, keeping each file's
// and directory's permission bits (blobs are read-only).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o600); err != nil {
			return err
		}
		return os.Chmod(target, info.Mode().Perm())
	})
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
		{"entry hash overwritten", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE entries SET hash = '`+strings.Repeat("ab", 32)+`' WHERE seq = 4`)
		}, []ledger.Finding{{Check: "chain", Seq: 4, Message: "content does not match"}, {Check: "chain", Seq: 5, Message: "does not match the hash of entry 4"}}},
		{"whole entry rewritten with a recomputed hash", func(t *testing.T, dir string, _ []ledger.Digest) {
			rewriteChain(t, dir, 4, 4, func(e *ledger.Entry) { e.Body = []byte(`{"i":30}`) })
		}, []ledger.Finding{{Check: "chain", Seq: 5, Message: "does not match the hash of entry 4"}}},
		{"entry inserted with seq 0", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `INSERT INTO entries SELECT 0, prev, hash, kind, run, at, blobs, body FROM entries WHERE seq = 3`)
		}, []ledger.Finding{{Check: "chain", Message: "entry 0 is outside the chain"}}},
		{"entry inserted with a negative seq", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `INSERT INTO entries SELECT -7, prev, hash, kind, run, at, blobs, body FROM entries WHERE seq = 3`)
		}, []ledger.Finding{{Check: "chain", Message: "entry -7 is outside the chain"}}},
		{"entry inserted in the middle", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE entries SET seq = seq + 100 WHERE seq > 6`)
			rawExec(t, dir, `UPDATE entries SET seq = seq - 99 WHERE seq > 100`)
			rawExec(t, dir, `INSERT INTO entries SELECT 7, prev, hash, kind, run, at, blobs, body FROM entries WHERE seq = 3`)
		}, []ledger.Finding{{Check: "chain", Seq: 7, Message: "does not match the hash of entry 6"}, {Check: "chain", Seq: 8, Message: "does not match the hash of entry 7"}}},
		{"blob truncated", func(t *testing.T, dir string, blobs []ledger.Digest) {
			p := filepath.Join(dir, "blobs", blobs[2].Hex()[:2], blobs[2].Hex())
			os.Chmod(p, 0o644)
			if err := os.Truncate(p, 3); err != nil {
				t.Fatal(err)
			}
		}, []ledger.Finding{{Check: "blob", Message: "content hashes to"}}},
		{"body valid JSON but not canonical", func(t *testing.T, dir string, _ []ledger.Digest) {
			rewriteChain(t, dir, 5, 13, func(e *ledger.Entry) { e.Body = []byte(`{ "i": 3 }`) })
		}, []ledger.Finding{{Check: "chain", Seq: 5, Message: "body is not canonical JSON"}}},
		{"wrong genesis entry", func(t *testing.T, dir string, _ []ledger.Digest) {
			rewriteChain(t, dir, 1, 13, func(e *ledger.Entry) { e.Body = []byte(`{"ledger_id":"00000000000000000000000000000000","schema":1}`) })
		}, []ledger.Finding{{Check: "chain", Seq: 1, Message: "the first entry is not this ledger's"}}},
		{"trigger added to ledger.db", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `CREATE TRIGGER quiet AFTER INSERT ON entries BEGIN SELECT 1; END`)
		}, []ledger.Finding{{Check: "schema", Message: "trigger quiet"}}},
		{"view, table and index added to ledger.db", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `CREATE VIEW v AS SELECT seq FROM entries`)
			rawExec(t, dir, `CREATE TABLE extra(x)`)
			rawExec(t, dir, `CREATE INDEX entries_at ON entries(at)`)
		}, []ledger.Finding{{Check: "schema", Message: "view v"}, {Check: "schema", Message: "table extra"}, {Check: "schema", Message: "index entries_at"}}},
		{"derived table edited and derived_version reset", func(t *testing.T, dir string, _ []ledger.Digest) {
			rawExec(t, dir, `UPDATE metrics SET vals = zeroblob(8)`)
			rawExec(t, dir, `UPDATE meta SET value = '0' WHERE key = 'derived_version'`)
		}, []ledger.Finding{{Check: "derived", Message: "table metrics row 1"}, {Check: "meta", Message: "derived_version"}}},
		{"page of ledger.db corrupted", func(t *testing.T, dir string, _ []ledger.Digest) {
			corruptEntriesPage(t, dir)
		}, []ledger.Finding{{Check: "sqlite", Message: ""}}},
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

// rewriteChain rewrites entries from..to as an attacker holding rlgate's
// own code would: edit changes the first, then every entry in the range
// gets its prev and hash recomputed, so the range is internally consistent.
func rewriteChain(t *testing.T, dir string, from, to int64, edit func(*ledger.Entry)) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var prev ledger.Digest
	for seq := from; seq <= to; seq++ {
		var prevHex, kind, run, at, blobs, body string
		if err := db.QueryRow(`SELECT prev, kind, run, at, blobs, body FROM entries WHERE seq = ?`, seq).Scan(&prevHex, &kind, &run, &at, &blobs, &body); err != nil {
			t.Fatalf("entry %d: %v", seq, err)
		}
		e := ledger.Entry{Seq: seq, Kind: kind, Run: run, At: at, Body: []byte(body)}
		for _, b := range strings.Fields(blobs) {
			d, err := ledger.ParseDigest(b)
			if err != nil {
				t.Fatal(err)
			}
			e.Blobs = append(e.Blobs, d)
		}
		if seq == from {
			if e.Prev, err = ledger.ParseDigest(prevHex); err != nil {
				t.Fatal(err)
			}
			edit(&e)
		} else {
			e.Prev = prev
		}
		e.Hash = ledger.ComputeHash(&e)
		prev = e.Hash
		if _, err := db.Exec(`UPDATE entries SET prev = ?, hash = ?, body = ? WHERE seq = ?`, e.Prev.Hex(), e.Hash.Hex(), string(e.Body), seq); err != nil {
			t.Fatal(err)
		}
	}
}

// corruptEntriesPage overwrites the page header of the entries table's
// root page, which SQLite then reports as malformed.
func corruptEntriesPage(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	err = db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'entries'`).Scan(&root)
	if err == nil {
		err = db.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	}
	if err == nil {
		_, err = db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "ledger.db"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff, 0xff}, (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
}

// TestVerifySuffixRewriteNeedsAgainst: a suffix rewritten with every hash
// recomputed is a valid chain; verify alone cannot tell, and only a head
// printed before the rewrite shows it.
func TestVerifySuffixRewriteNeedsAgainst(t *testing.T) {
	dir, _ := tamperFixture(t)
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := l.Head(ctx)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	rewriteChain(t, dir, 5, 13, func(e *ledger.Entry) { e.Body = []byte(`{"i":30}`) })
	if rep := verifyDir(t, dir, ledger.VerifyOptions{}); !rep.OK() {
		t.Fatalf("a consistently rewritten suffix is a valid chain; verify alone reported:\n%s", findings(rep))
	}
	rep := verifyDir(t, dir, ledger.VerifyOptions{Against: &head})
	if rep.OK() || !strings.Contains(findings(rep), "entry 13 now has hash") {
		t.Errorf("verify --against an earlier head missed the rewrite:\n%s", findings(rep))
	}
}

// TestDerivedRebuildOnOpen: with meta naming another derived version, open
// rebuilds tables that agree with the entries (or have another shape, as
// an older version's would), and leaves edited ones for verify to report.
func TestDerivedRebuildOnOpen(t *testing.T) {
	dir, _ := tamperFixture(t)
	rawExec(t, dir, `UPDATE meta SET value = '0' WHERE key = 'derived_version'`)
	rawExec(t, dir, `DROP TABLE runs`)
	rawExec(t, dir, `CREATE TABLE runs (run TEXT PRIMARY KEY, stage TEXT NOT NULL) WITHOUT ROWID`)
	if rep := verifyDir(t, dir, ledger.VerifyOptions{}); !rep.OK() {
		t.Fatalf("open should have rebuilt the derived tables:\n%s", findings(rep))
	}
	var v string
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'derived_version'`).Scan(&v); err != nil || v != "3" {
		t.Errorf("derived_version after the rebuild: %q, %v", v, err)
	}
}

// TestThreatModelNamesTests keeps docs/FORMAT.md's threat model honest:
// every test its tables name exists, as a test function or as a case of
// TestVerifyDetectsTampering.
func TestThreatModelNamesTests(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(doc)[strings.Index(string(doc), "## Threat model"):], "\nNothing in the ledger")
	var sources strings.Builder
	for _, pattern := range []string{"*_test.go", "../cmd/rlgate/*_test.go"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources.Write(b)
		}
	}
	named := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 2 || strings.HasPrefix(cells[0], "---") {
			continue
		}
		parts := strings.Split(cells[len(cells)-1], "`")
		for i := 1; i < len(parts); i += 2 {
			name := parts[i]
			if name == "test" {
				continue
			}
			named++
			want := `{"` + name + `",`
			if strings.HasPrefix(name, "Test") {
				want = "func " + name + "("
			}
			if !strings.Contains(sources.String(), want) {
				t.Errorf("the threat model names %q, which is no test or TestVerifyDetectsTampering case", name)
			}
		}
	}
	if named < 20 {
		t.Errorf("found only %d test names in the threat model; has its layout changed?", named)
	}
}
