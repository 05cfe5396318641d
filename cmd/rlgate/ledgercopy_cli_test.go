package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
)

// copyLedgerCopy runs `ledger copy --json` through run as given and
// returns its summary.
func copyLedgerCopy(t *testing.T, run func(args ...string) (int, string, string), from, to string) ledger.CopyResult {
	t.Helper()
	code, out, errOut := run("ledger", "copy", "--json", "--from", from, "--to", to)
	if code != exitOK {
		t.Fatalf("ledger copy: exit %d: %s", code, errOut)
	}
	var res ledger.CopyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ledger copy --json: %v: %s", err, out)
	}
	return res
}

// copySameLedger checks through the CLI that the ledgers in a and b have
// the same head, entries and runs, and that b verifies clean.
func copySameLedger(t *testing.T, a, b string) {
	t.Helper()
	for _, args := range [][]string{{"head"}, {"log", "--json"}, {"runs", "--json"}} {
		_, want, _ := rlgate(t, append([]string{"--ledger", a}, args...)...)
		_, got, _ := rlgate(t, append([]string{"--ledger", b}, args...)...)
		if diff := cmp.Diff(want, got); diff != "" || want == "" {
			t.Errorf("%v differs (-source +copy):\n%s", args, diff)
		}
	}
	if code, out, _ := rlgate(t, "--ledger", b, "verify"); code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify the copy: exit %d: %s", code, out)
	}
}

// TestLedgerCopyCLI: a stranger who may not write the source copies it
// into a new directory, then copies again after it grew: the copy has the
// same head, entries and runs, verifies clean, and the second copy takes
// only the new entries; a third copies nothing.
func TestLedgerCopyCLI(t *testing.T) {
	src := readonlyLogLedger(t) // a real stage run, real Spider databases
	if code, _, errOut := rlgate(t, "--ledger", src, "run", "--stage", "sft", "--run", "sft1", "--gpu", "off",
		"--metrics", "../../testdata/trainer-logs/llamafactory-trainer_log.jsonl:llamafactory", "--", "true"); code != exitOK {
		t.Fatal(errOut)
	}
	readonlyChmod(t, src)
	stranger := readonlyStranger(t)
	room := t.TempDir() // writable by the stranger
	if err := os.Chmod(room, 0o777); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(room); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	dst := filepath.Join(room, "copy")
	_, headOut, _ := rlgate(t, "--ledger", src, "head")
	head, err := ledger.ParseHead(strings.TrimSpace(headOut))
	if err != nil {
		t.Fatal(err)
	}
	before := readonlySnapshot(t, src)
	res := copyLedgerCopy(t, stranger, src, dst)
	if !res.Created || res.Entries != head.Seq || res.Blobs == 0 || res.Head != head {
		t.Errorf("first copy: %+v, want a new ledger of %d entries with blobs and head %s", res, head.Seq, head)
	}
	if diff := cmp.Diff(before, readonlySnapshot(t, src)); diff != "" {
		t.Errorf("the copy changed the source (-before +after):\n%s", diff)
	}
	copySameLedger(t, src, dst)

	if code, _, errOut := rlgate(t, "--ledger", src, "hash", "--record", "../../testdata/spider/database/world_1"); code != exitOK {
		t.Fatal(errOut) // the test's user may write it (root, or its owner)
	}
	res = copyLedgerCopy(t, stranger, src, dst)
	if res.Created || res.Entries != 1 || res.Blobs != 1 || res.Head.Seq != head.Seq+1 {
		t.Errorf("copy after one more entry: %+v, want that entry and its manifest blob", res)
	}
	copySameLedger(t, src, dst)
	if res := copyLedgerCopy(t, stranger, src, dst); res.Entries != 0 || res.Blobs != 0 {
		t.Errorf("copy of a copy up to date: %+v, want nothing copied", res)
	}
}

// TestLedgerCopyCLIRefuses: a copy that diverged from its source is
// refused, exit 1, naming the first seq that differs; a source missing a
// blob is refused naming the blob and its entry, and what was copied
// before it verifies clean.
func TestLedgerCopyCLIRefuses(t *testing.T) {
	t.Parallel()
	src := readonlyLogLedger(t)
	dst := filepath.Join(t.TempDir(), "copy")
	res := copyLedgerCopy(t, func(args ...string) (int, string, string) { return rlgate(t, args...) }, src, dst)
	for dir, db := range map[string]string{src: "world_1", dst: "pets_1"} {
		if code, _, errOut := rlgate(t, "--ledger", dir, "hash", "--record", "../../testdata/spider/database/"+db); code != exitOK {
			t.Fatal(errOut)
		}
	}
	noLedger := filepath.Join(t.TempDir(), "none")
	if code, _, errOut := rlgate(t, "ledger", "copy", "--from", noLedger, "--to", dst); code != exitError ||
		!strings.Contains(errOut, "ledger copy --from "+noLedger+": no ledger here. Try: give --from a ledger directory") {
		t.Errorf("copy from no ledger: exit %d, %q", code, errOut)
	}
	code, _, errOut := rlgate(t, "ledger", "copy", "--from", src, "--to", dst)
	if want := "diverged at seq " + strconv.FormatInt(res.Head.Seq+1, 10); code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("diverged copy: exit %d, %q; want exit 1 and %q", code, errOut, want)
	}

	es := readonlyLogJSON(t, src)
	var named ledger.Entry // the first entry naming a blob, after entry 2
	for _, e := range es[2:] {
		if len(e.Blobs) > 0 {
			named = e
			break
		}
	}
	gone := named.Blobs[0]
	if err := os.Remove(filepath.Join(src, "blobs", gone.Hex()[:2], gone.Hex())); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "copy")
	code, _, errOut = rlgate(t, "ledger", "copy", "--from", src, "--to", fresh)
	want := "blob " + gone.String() + ", named by entry " + strconv.FormatInt(named.Seq, 10)
	if code != exitError || !strings.Contains(errOut, want) || !strings.Contains(errOut, "Try: rlgate verify --ledger "+src) {
		t.Errorf("copy of a source missing a blob: exit %d, %q; want exit 1 and %q", code, errOut, want)
	}
	if code, out, _ := rlgate(t, "--ledger", fresh, "verify"); code != exitOK || !strings.Contains(out, "0 errors") {
		t.Errorf("verify what was copied: exit %d: %s", code, out)
	}
}
