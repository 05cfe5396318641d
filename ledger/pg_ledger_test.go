//go:build postgres

package ledger_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGCopyRoundTrip: SQLite -> PostgreSQL -> SQLite gives the same
// entries, runs and head at every step, each copy verifying clean, and
// incremental copies along the same path after the source grew.
func TestPGCopyRoundTrip(t *testing.T) {
	src := copySource(t, 3)
	pg := ledgertest.Postgres(t)
	res, err := ledger.Copy(ctx, src, pg, ledger.CopyOptions{Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Entries != 19 {
		t.Errorf("copy into PostgreSQL: %+v, want a new ledger of 19 entries", res)
	}
	copyCheck(t, src, pg)
	if n := pgCount(t, pg); n != 19 {
		t.Errorf("PostgreSQL holds %d entries, want 19", n)
	}
	copyBackAndGrow(t, src, pg)
}

// copyBackAndGrow is the second half of a round trip through the
// PostgreSQL ledger at pg, which holds a copy of src: pg is copied into a
// new SQLite ledger, then src grows by one entry naming a new blob, and
// the incremental copies src -> pg -> SQLite each carry exactly that
// entry and blob; every copy checks against src.
func copyBackAndGrow(t *testing.T, src *ledger.Ledger, pg string) {
	t.Helper()
	pgl, err := ledger.OpenReadOnly(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pgl.Close()
	back := filepath.Join(t.TempDir(), "back")
	if _, err := ledger.Copy(ctx, pgl, back, ledger.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	copyCheck(t, src, back)

	d, err := src.PutBlobBytes([]byte("one more chunk\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Append(ctx, ledger.Record{Kind: "log", Run: "rl0", Body: map[string]int{"offset": 1}, Blobs: []ledger.Digest{d}}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		from *ledger.Ledger
		to   string
	}{{src, pg}, {pgl, back}} {
		res, err := ledger.Copy(ctx, step.from, step.to, ledger.CopyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Created || res.Entries != 1 || res.Blobs != 1 {
			t.Errorf("incremental copy to %s: %+v, want 1 entry and 1 blob", step.to, res)
		}
		copyCheck(t, src, step.to)
	}
}

// TestPGConcurrentAppends: appenders on separate connections (as on
// separate hosts) form one chain: every entry present once, verify clean.
func TestPGConcurrentAppends(t *testing.T) {
	pg := ledgertest.Postgres(t)
	l, err := ledger.Init(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			lw, err := ledger.Open(ctx, pg)
			if err != nil {
				errs <- err
				return
			}
			defer lw.Close()
			for i := range each {
				if _, err := lw.Append(ctx, ledger.Record{Kind: "note", Body: map[string]int{"w": w, "i": i}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep := ledgertest.Check(t, l)
	if n := pgCount(t, pg); rep.Entries != 1+writers*each || n != rep.Entries {
		t.Errorf("%d entries verified, %d in PostgreSQL, want %d", rep.Entries, n, 1+writers*each)
	}
	seen := map[string]bool{}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: "note"}) {
		if err != nil {
			t.Fatal(err)
		}
		seen[string(e.Body)] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct entries, want %d", len(seen), writers*each)
	}
}

// TestPGVerifyFindsTampering: an entry edited in PostgreSQL, a derived row
// edited, and a trigger added are verify findings naming what changed.
func TestPGVerifyFindsTampering(t *testing.T) {
	src := copySource(t, 2)
	pg := ledgertest.Postgres(t)
	if _, err := ledger.Copy(ctx, src, pg, ledger.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	db := pgDB(t, pg)
	for _, q := range []string{
		`UPDATE entries SET body = replace(body, '"rl"', '"sft"') WHERE seq = 8`,
		`UPDATE outcomes SET correct = 1 - correct`,
		`CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
		`CREATE TRIGGER t BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION f()`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	l, err := ledger.OpenReadOnly(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := l.Verify(ctx, ledger.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, fmt.Sprintf("%s %d %s", f.Check, f.Seq, strings.SplitN(f.Message, ":", 2)[0]))
	}
	want := []string{
		"schema 0 function f was not created by rlgate",
		"schema 0 trigger t was not created by rlgate",
		"chain 8 content does not match its hash",
		"derived 0 table runs row 2", // rl1's stage, as entry 8 now reads
		"derived 0 table outcomes row 1",
		"derived 0 table outcomes row 2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// pgDB connects to the database of the PostgreSQL ledger URL loc directly,
// as an attacker or a check outside rlgate would.
func pgDB(t *testing.T, loc string) *sql.DB {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("blobs")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pgCount counts the entries the PostgreSQL database of loc holds.
func pgCount(t *testing.T, loc string) int64 {
	t.Helper()
	var n int64
	if err := pgDB(t, loc).QueryRow("SELECT count(*) FROM entries").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
